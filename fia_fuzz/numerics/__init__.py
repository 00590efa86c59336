"""Host arithmetic shared by the op's model, the golden and the differ: narrowing to a
stored dtype with our own rounding (`narrow`), exact dtype casts (`casts`) and OpenBLAS
thread control and kernel set (`blas`). It imports nothing else of fia_fuzz."""
