"""The peer of bench/gpt_bench.cc: the same GPT training step in PyTorch's CPU eager mode.

    python3 bench/pytorch_gpt_step.py [--autocast bf16] [--compile]
        # Debian's python3-torch, or the bench's own (bench/install_peers.sh)

Prints ms per step and tokens/s for the bench GPT (bench/peer_gpt.py) at batch 16 x 64,
with AdamW, as the uopc benchmark measures it. `--autocast bf16` runs the step under
torch.autocast("cpu", torch.bfloat16), the peer of BM_GptTrainStepBf16 (f32 parameters and
AdamW, matmuls in bf16). `--compile` runs the model's forward and backward through
torch.compile (Inductor's C++ kernels; the first steps compile, and are not timed).
"""
import argparse
import contextlib
import time

import torch
import torch.nn.functional as F

import peer_blas
from peer_gpt import CONTEXT, GPT, V

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--autocast", choices=["bf16"], help="run the step under torch.autocast")
parser.add_argument("--compile", action="store_true", help="torch.compile the model")
args = parser.parse_args()
B, T = 16, CONTEXT
peer_blas.check()
torch.manual_seed(0)
model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
forward = torch.compile(model) if args.compile else model
x = torch.arange(B * T).remainder(V).view(B, T)
y = (torch.arange(B * T) * 7).remainder(V)


def step():
    with (torch.autocast("cpu", dtype=torch.bfloat16) if args.autocast
          else contextlib.nullcontext()):
        loss = F.cross_entropy(forward(x).view(B * T, V), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


for _ in range(3 if args.compile else 1):  # (compiling: the forward, then the backward)
    step()
n, start = 0, time.perf_counter()
while time.perf_counter() - start < 5.0:
    step()
    n += 1
ms = (time.perf_counter() - start) / n * 1e3
mode = "autocast bf16" if args.autocast else "f32"
how = "torch.compile" if args.compile else "eager"
print(f"pytorch {torch.__version__} cpu {how} {mode}, {torch.get_num_threads()} threads: {ms:.1f} ms/step, {B * T / ms * 1e3:.0f} tokens/s")
