"""The op's model: its signature (`params`), tensors, geometry, the call view
(`call.CallView`, assembled from `view/`, one module per concern), output inference,
deterministic values, and `Case`, one call of the op with a recipe for its data.
It imports nothing else of fia_fuzz."""
