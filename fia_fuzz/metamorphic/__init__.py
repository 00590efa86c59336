"""Device-only oracles: metamorphic relations between equivalent calls of the op.

Some kernel bugs hide inside the golden's tolerance, some behind a golden that
shares a misreading of the docs. The op offers many ways to ask the same
question; a kernel must give the same answer to each (bit-identical where
only addressing changes, within a stated tolerance where the kernel may
reorder its arithmetic), and the same answer twice. See RELATIONS.
"""

import fia_fuzz.metamorphic.relations  # noqa: F401  (registers the catalogue)
from fia_fuzz.metamorphic.catalogue import RELATIONS, NotApplicable, Partner, Relation
from fia_fuzz.metamorphic.check import build_partners, check_relations, partner_id, summarise
from fia_fuzz.metamorphic.equality import Tolerance

__all__ = ["RELATIONS", "NotApplicable", "Partner", "Relation", "Tolerance",
           "build_partners", "check_relations", "partner_id", "summarise"]
