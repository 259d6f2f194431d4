"""The peer of tensor_bench's BM_TensorMatmul and BM_TensorMatmulBf16: an n x n matmul in
PyTorch on the CPU, f32 and bf16 (bf16 operands and result: oneDNN's kernels, which use the
CPU's bf16 instructions or its matrix unit where it has them).

    python3 bench/pytorch_matmul.py    # the bench's PyTorch (bench/install_peers.sh)

Prints the PyTorch version, the CPU capability it dispatches to, and GFLOP/s at n = 512,
1024, 2048 for each dtype.
"""
import time

import torch

print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads, "
      f"cpu capability {torch.backends.cpu.get_cpu_capability()}")
for dtype in (torch.float32, torch.bfloat16):
    for n in (512, 1024, 2048):
        a = torch.full((n, n), 0.5, dtype=dtype)
        b = torch.full((n, n), 0.25, dtype=dtype)
        a @ b
        runs, start = 0, time.perf_counter()
        while runs < 3 or time.perf_counter() - start < 2:
            a @ b
            runs += 1
        seconds = (time.perf_counter() - start) / runs
        print(f"pytorch matmul {str(dtype).split('.')[-1]} {n}: {2 * n**3 / seconds / 1e9:.1f} GFLOP/s")
