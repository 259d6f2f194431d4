"""The peer of bench/decode_bench.cc: decoding one token of the bench GPT in PyTorch's CPU
eager mode without a KV cache (the model of bench/pytorch_gpt_step.py, in eval mode under
no_grad): the logits of the last of p + 1 tokens, for p = 8, 32, 56.

    OPENBLAS_NUM_THREADS=2 python3 bench/pytorch_gpt_decode.py   # Debian's python3-torch

Prints ms per token at each position.
"""
import math
import time

import torch

import peer_blas
import torch.nn as nn
import torch.nn.functional as F

CONTEXT, C, H, L, V = 64, 128, 4, 4, 65
peer_blas.check()
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool), 1))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(CONTEXT, C)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.ln_f, self.lm_head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x[:, -1:]))


model = GPT().eval()
with torch.no_grad():
    for p in (8, 32, 56):
        idx = (torch.arange(p + 1) * 7 + 3).remainder(V).view(1, p + 1)
        model(idx)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 3.0:
            model(idx)
            n += 1
        ms = (time.perf_counter() - start) / n * 1e3
        print(f"pytorch {torch.__version__} cpu eager, {torch.get_num_threads()} threads, "
              f"no cache: position {p}: {ms:.3f} ms/token")
