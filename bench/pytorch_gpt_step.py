"""The peer of bench/gpt_bench.cc: the same GPT training step in PyTorch's CPU eager mode.

    python3 bench/pytorch_gpt_step.py      # needs Debian's python3-torch

Prints ms per step and tokens/s for 4 layers, dim 128, 4 heads, context 64, batch 16,
vocabulary 65, with AdamW, as the uopc benchmark measures it.
"""
import math
import time

import torch

import peer_blas
import torch.nn as nn
import torch.nn.functional as F

B, T, C, H, L, V = 16, 64, 128, 4, 4, 65
peer_blas.check()
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
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.arange(B * T).remainder(V).view(B, T)
y = (torch.arange(B * T) * 7).remainder(V)


def step():
    loss = F.cross_entropy(model(x).view(B * T, V), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


step()
n, start = 0, time.perf_counter()
while time.perf_counter() - start < 5.0:
    step()
    n += 1
ms = (time.perf_counter() - start) / n * 1e3
print(f"pytorch {torch.__version__} cpu eager, {torch.get_num_threads()} threads: {ms:.1f} ms/step, {B * T / ms * 1e3:.0f} tokens/s")
