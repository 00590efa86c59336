"""The call view by concern: one module per kind of question a rule asks of a call.

`arguments` normalises the arguments (tensors to TensorSpec, value arguments to int
lists, attribute defaults); `layout` reads the layout and the KV source form;
`dims` the problem dimensions from the shapes; `paging` the paged cache and its
block table; `lengths` the per-batch valid lengths, padding and shared prefix;
`quant` the quantisation mode in effect and the output dtype. Each is a mixin over
`arguments.Arguments`; `fia_fuzz.op.call.CallView` assembles them, and is the one
name callers import.
"""
