"""Host arithmetic shared by the golden model and the differ: exact dtype casts
(`casts`) and OpenBLAS thread control and kernel set (`blas`). It imports nothing
else of fia_fuzz."""
