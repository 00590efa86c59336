"""The op's model: its signature (`params`), tensors, geometry, the call view, output
inference, deterministic values, and `Case`, one call of the op with a recipe for its
data. The bottom layer: it imports nothing else of fia_fuzz."""
