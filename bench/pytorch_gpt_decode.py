"""The peer of bench/decode_bench.cc: decoding one token of the bench GPT (bench/peer_gpt.py)
in PyTorch's CPU eager mode without a KV cache, in eval mode under no_grad: the logits of
the last of p + 1 tokens, for p = 8, 32, 56.

    OPENBLAS_NUM_THREADS=2 python3 bench/pytorch_gpt_decode.py   # Debian's python3-torch

Prints ms per token at each position.
"""
import time

import torch

import peer_blas
from peer_gpt import GPT, V

peer_blas.check()
torch.manual_seed(0)
model = GPT().eval()
with torch.no_grad():
    for p in (8, 32, 56):
        idx = (torch.arange(p + 1) * 7 + 3).remainder(V).view(1, p + 1)
        model(idx, last_only=True)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 3.0:
            model(idx, last_only=True)
            n += 1
        ms = (time.perf_counter() - start) / n * 1e3
        print(f"pytorch {torch.__version__} cpu eager, {torch.get_num_threads()} threads, "
              f"no cache: position {p}: {ms:.3f} ms/token")
