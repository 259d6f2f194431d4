"""The bench GPT in PyTorch, for the peers of uopc's benchmarks (bench/pytorch_*.py): 4
layers, dim 128, 4 heads, context 64, vocabulary 65, GELU (tanh), the output projection
untied, as bench/gpt_bench.cc and bench/decode_bench.cc build it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONTEXT, C, H, L, V = 64, 128, 4, 4, 65


class Block(nn.Module):
    def __init__(self, dim=C, heads=H, context=CONTEXT):
        super().__init__()
        self.dim, self.heads = dim, heads
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.c_fc, self.mlp_proj = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.register_buffer("mask", torch.triu(torch.ones(context, context, dtype=torch.bool), 1))

    def forward(self, x):
        B, T, _ = x.shape
        C, H = self.dim, self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    """The bench GPT by default; other sizes as gpt_train's flags give them."""

    def __init__(self, vocab=V, dim=C, heads=H, layers=L, context=CONTEXT):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.h = nn.ModuleList(Block(dim, heads, context) for _ in range(layers))
        self.ln_f, self.lm_head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, last_only=False):
        """Token indices (B, T) to logits (B, T, V); with last_only, of the last position."""
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x[:, -1:] if last_only else x))
