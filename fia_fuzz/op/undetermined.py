"""`Undetermined`: a quantity of the call cannot be read because an input it needs is
absent or malformed; the call view raises it and a rule that meets it is skipped."""


class Undetermined(Exception):
    """A rule cannot be judged because an input it depends on is absent or illegal."""
