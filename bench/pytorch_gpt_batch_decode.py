"""The peer of bench/batch_decode_bench.cc: the same 32 greedy requests (prompts of 8-32
tokens, 8-32 new tokens each, bench/batch_decode_bench.cc's formula) on the bench GPT
(bench/peer_gpt.py) in PyTorch's CPU eager mode under no_grad, batched as a PyTorch user
would without a serving engine: B requests at a time over a padded KV cache (B, heads,
context, head dim) per layer, prompts right-padded and prefilled together, then one decode
step for the whole batch until its longest request is done (static batching).

    ~/.cache/uopc/benchpeers/bin/python3 bench/pytorch_gpt_batch_decode.py  # (install_peers.sh)

Prints generated tokens a second at B = 1, 8 and 32.
"""
import math
import time

import torch
import torch.nn.functional as F

import peer_blas
from peer_gpt import CONTEXT, GPT, V


def requests():
    """bench/batch_decode_bench.cc's Requests()."""
    out = []
    for i in range(32):
        prompt = [(i * 31 + t * 7) % V for t in range(8 + (i * 7) % 25)]
        out.append((prompt, 8 + (i * 11) % 25))
    return out


def attend(block, x, kc, vc, pos, valid):
    """x (B, T, C) at positions pos (B, T); keys and values written into kc, vc (B, H, CONTEXT,
    D) at those positions; each query attends to its sequence's positions <= its own."""
    B, T, C = x.shape
    H = block.heads
    D = C // H
    q, k, v = block.c_attn(block.ln_1(x)).split(C, dim=2)
    q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
    b = torch.arange(B).view(B, 1).expand(B, T)
    kc[b, :, pos] = k.transpose(1, 2)
    vc[b, :, pos] = v.transpose(1, 2)
    span = int(pos.max()) + 1
    att = (q @ kc[:, :, :span].transpose(-2, -1)) * (1.0 / math.sqrt(D))
    future = torch.arange(span).view(1, 1, 1, span) > pos.view(B, 1, T, 1)
    att = att.masked_fill(future | ~valid.view(B, 1, 1, span), float("-inf")).softmax(-1)
    x = x + block.c_proj((att @ vc[:, :, :span]).transpose(1, 2).reshape(B, T, C))
    return x + block.mlp_proj(F.gelu(block.c_fc(block.ln_2(x)), approximate="tanh"))


def forward(model, idx, pos, caches, valid):
    x = model.wte(idx) + model.wpe(pos)
    for block, (kc, vc) in zip(model.h, caches):
        x = attend(block, x, kc, vc, pos, valid)
    return model.lm_head(model.ln_f(x))


def serve(model, batch):
    """The batch's new tokens, each request's own: prefill, then decode to the longest."""
    B = len(batch)
    lengths = torch.tensor([len(p) for p, _ in batch])
    T = int(lengths.max())
    idx = torch.zeros(B, T, dtype=torch.long)
    for i, (p, _) in enumerate(batch):
        idx[i, :len(p)] = torch.tensor(p)
    D = model.h[0].dim // model.h[0].heads
    caches = [(torch.zeros(B, model.h[0].heads, CONTEXT, D), torch.zeros(B, model.h[0].heads,
                                                                       CONTEXT, D))
              for _ in model.h]
    valid = torch.zeros(B, CONTEXT, dtype=torch.bool)
    valid[torch.arange(CONTEXT).view(1, -1) < lengths.view(-1, 1)] = True
    logits = forward(model, idx, torch.arange(T).expand(B, T), caches, valid[:, :T])
    nxt = logits[torch.arange(B), lengths - 1].argmax(-1)
    out = [[int(t)] for t in nxt]
    pos = lengths.clone()
    for _ in range(max(n for _, n in batch) - 1):
        valid[torch.arange(B), pos] = True
        span = int(pos.max()) + 1
        logits = forward(model, nxt.view(B, 1), pos.view(B, 1), caches, valid[:, :span])
        nxt = logits[:, 0].argmax(-1)
        for i in range(B):
            out[i].append(int(nxt[i]))
        pos += 1
    return [o[:n] for o, (_, n) in zip(out, batch)]


peer_blas.check()
torch.manual_seed(0)
model = GPT().eval()
reqs = requests()
wanted = sum(n for _, n in reqs)
with torch.no_grad():
    serve(model, reqs[:2])  # (warm)
    for B in (1, 8, 32):
        start = time.perf_counter()
        for at in range(0, len(reqs), B):
            serve(model, reqs[at:at + B])
        s = time.perf_counter() - start
        print(f"pytorch {torch.__version__} cpu eager, {torch.get_num_threads()} threads, "
              f"static batches of {B} over a padded KV cache: {wanted / s:.0f} tokens/s")
