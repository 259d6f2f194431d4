"""Which BLAS the PyTorch peer runs on, found in this process's memory map after a matmul.

Debian's python3-torch calls whatever libblas.so.3 is installed: without
libopenblas0-pthread that is the reference BLAS, some 40x slower, and no fair peer. The
benchmarks print the library and refuse the reference one.
"""
import os
import sys

import torch


def coretype():
    """The OpenBLAS kernel asked for: OPENBLAS_CORETYPE, or "auto" (OpenBLAS's own choice,
    which may be a slow one on a CPU newer than it: ../shared/tools/peer-openblas-coretype
    finds the fastest)."""
    return os.environ.get("OPENBLAS_CORETYPE") or "auto"


def check():
    torch.ones(64, 64) @ torch.ones(64, 64)  # (loads the BLAS, if torch loads it lazily)
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "blas" in path.lower() or "mkl" in path.lower():
                libs.add(path)
    names = ", ".join(sorted(libs)) or "none found (torch's own kernels)"
    print(f"BLAS: {names}, OPENBLAS_CORETYPE={coretype()}")
    reference = [p for p in libs if "/blas/" in p and "openblas" not in p]
    if reference:
        sys.exit("the reference BLAS is no peer: install libopenblas0-pthread "
                 "(update-alternatives selects it for libblas.so.3)")
