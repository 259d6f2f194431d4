"""The peer of examples/gpt/gpt_train at any size: the same character GPT (bench/peer_gpt.py,
GELU (tanh), the output projection untied) trained in PyTorch eager with AdamW on random
windows of a text file, printing steady tokens/s as gpt_train's progress line does.

    OMP_NUM_THREADS=2 $(bench/install_peers.sh) bench/pytorch_gpt_train.py \\
        --dim 512 --layers 6 --heads 8 --context 128 --batch 8 --steps 20

The first 2 steps are not timed (allocations and caches warming up).
"""
import argparse
import time

import torch
import torch.nn.functional as F

from peer_gpt import GPT

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
for flag, default in (("dim", 64), ("layers", 2), ("heads", 4), ("context", 64), ("batch", 16),
                      ("steps", 20)):
    parser.add_argument(f"--{flag}", type=int, default=default)
args = parser.parse_args()
text = open(args.data, encoding="utf-8", errors="replace").read()
chars = sorted(set(text))
data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
torch.manual_seed(0)
model = GPT(len(chars), args.dim, args.heads, args.layers, args.context)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
B, T = args.batch, args.context
timed, start = 0, None
for step in range(args.steps):
    if step == 2:
        start = time.perf_counter()
    at = torch.randint(len(data) - T - 1, (B,))
    x = torch.stack([data[i:i + T] for i in at])
    y = torch.stack([data[i + 1:i + T + 1] for i in at])
    loss = F.cross_entropy(model(x).view(B * T, len(chars)), y.view(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    timed += step >= 2
seconds = time.perf_counter() - start
params = sum(p.numel() for p in model.parameters())
print(f"pytorch {torch.__version__} eager, {torch.get_num_threads()} threads, {params} parameters: "
      f"loss {loss.item():.4f}, {timed * B * T / seconds:.0f} tok/s")
