"""FIA composed around one attention kernel: each feature is a step before or after it.

Independent of `fia_fuzz.golden` on purpose: the torch runners are a second
opinion, so they read the semantics from fia-semantics.md and the seeds, not
from the golden's code. Steps: `geometry` (which query rows and KV tokens each
batch uses), `kv` (contiguous, packed, tensor-list, paged and prefix KV),
`antiquant` (int8/int4 KV dequantised first), `masks` (sparse modes, band,
user mask, pse and sink as an additive bias), `postquant` (int8 output),
`attend` (the whole op around a kernel).
"""
