"""The peers of bench/cuda_bench.cc, measured with PyTorch on the same GPU.

    /opt/torch/.venv/bin/python3 bench/pytorch_cuda_peers.py

Prints: add of two 64M-f32 tensors and the sums of 1,024 rows of 4,096 (TB/s), an empty
kernel's launch and synchronize (us),
f32 matmul at 1024 and 4096 without tensor cores and bf16 at 4096 (TFLOP/s), and the training step of the
bench GPT (bench/peer_gpt.py, batch 16, AdamW) in eager mode (ms).
"""
import time

import torch
import torch.nn.functional as F

from peer_gpt import CONTEXT, GPT, V

dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False  # f32 as uopc computes it


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters


n = 64 << 20
a, b = torch.rand(n, device=dev), torch.rand(n, device=dev)
print(f"add 64M f32: {3 * n * 4 / timed(lambda: a + b, 50) / 1e12:.2f} TB/s")
rows = torch.rand(1024, 4096, device=dev)
print(f"row sums 1024 x 4096 f32: {rows.numel() * 4 / timed(lambda: rows.sum(1), 200) / 1e12:.2f} TB/s")
empty = torch.empty(0, device=dev)
t = timed(lambda: (empty.add_(0), torch.cuda.synchronize()), 2000)
print(f"empty kernel launch + sync: {t * 1e6:.1f} us")
for m in (1024, 4096):
    x, y = torch.rand(m, m, device=dev), torch.rand(m, m, device=dev)
    print(f"matmul {m}: {2 * m ** 3 / timed(lambda: x @ y, 20) / 1e12:.1f} TFLOP/s")
m = 4096
x, y = (torch.rand(m, m, device=dev, dtype=torch.bfloat16) for _ in range(2))
print(f"matmul bf16 {m}: {2 * m ** 3 / timed(lambda: x @ y, 50) / 1e12:.1f} TFLOP/s")

B, T = 16, CONTEXT
torch.manual_seed(0)
model = GPT().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
xi = torch.arange(B * T, device=dev).remainder(V).view(B, T)
yi = (torch.arange(B * T, device=dev) * 7).remainder(V)


def step():
    loss = F.cross_entropy(model(xi).view(B * T, V), yi)
    opt.zero_grad()
    loss.backward()
    opt.step()


print(f"gpt train step: {timed(step, 50) * 1e3:.2f} ms")
