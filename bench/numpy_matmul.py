"""The peer of tensor_bench's BM_TensorMatmul: an f32 n x n matmul in numpy (its BLAS).

    OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=$(../shared/tools/peer-openblas-coretype) \
        python3 bench/numpy_matmul.py   # unset OPENBLAS_L2_SIZE (and an empty CORETYPE)

Prints the BLAS it runs on (refusing the reference one) and GFLOP/s at n = 512, 1024, 2048.
"""
import os
import sys
import time

import numpy as np

a = np.ones((64, 64), dtype=np.float32)
a @ a  # loads the BLAS
libs = {line.split()[-1] for line in open("/proc/self/maps")
        if len(line.split()) >= 6 and "blas" in line.split()[-1].lower()}
print("BLAS: " + (", ".join(sorted(libs)) or "none found") +
      f", OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE') or 'auto'}")
if any("/blas/" in p and "openblas" not in p for p in libs):
    sys.exit("the reference BLAS is no peer: install libopenblas0-pthread")
for n in (512, 1024, 2048):
    a = np.full((n, n), 0.5, dtype=np.float32)
    b = np.full((n, n), 0.25, dtype=np.float32)
    a @ b
    runs, start = 0, time.perf_counter()
    while runs < 3 or time.perf_counter() - start < 2:
        a @ b
        runs += 1
    seconds = (time.perf_counter() - start) / runs
    print(f"numpy matmul {n}: {2 * n ** 3 / seconds / 1e9:.1f} GFLOP/s")
