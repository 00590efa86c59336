"""The legality model: every documented rule with its id and citation (`rulebook/`),
the rule profiles (the docs, or a chip's own checks), `validate` and the rules' doc
page. On `fia_fuzz.op` only."""
