"""Reading and writing the user's files: case and call JSON (with the .npz of stored
tensors beside them), each fault one `InputError` line."""
