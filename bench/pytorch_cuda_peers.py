"""The peers of bench/cuda_bench.cc, measured with PyTorch on the same GPU.

    /opt/torch/.venv/bin/python3 bench/pytorch_cuda_peers.py

Prints: add of two 64M-f32 tensors (TB/s), an empty kernel's launch and synchronize (us),
f32 matmul at 1024 and 4096 without tensor cores (TFLOP/s), and the training step of the
bench GPT (4 layers, dim 128, 4 heads, context 64, batch 16, AdamW) in eager mode (ms).
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

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
empty = torch.empty(0, device=dev)
t = timed(lambda: (empty.add_(0), torch.cuda.synchronize()), 2000)
print(f"empty kernel launch + sync: {t * 1e6:.1f} us")
for m in (1024, 4096):
    x, y = torch.rand(m, m, device=dev), torch.rand(m, m, device=dev)
    print(f"matmul {m}: {2 * m ** 3 / timed(lambda: x @ y, 20) / 1e12:.1f} TFLOP/s")

B, T, C, H, L, V = 16, 64, 128, 4, 4, 65
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(self, x):
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = att.masked_fill(self.mask, float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.ln_f, self.lm_head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


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
