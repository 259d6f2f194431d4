"""A peer of bench/gpt_bench.cc: the bench GPT's training step in tinygrad on its CPU device,
the step (forward, backward, AdamW) captured with TinyJit, as a tinygrad user writes it.

    $(bench/install_peers.sh) bench/tinygrad_gpt_step.py

The model is bench/peer_gpt.py's (4 layers, dim 128, 4 heads, context 64, vocabulary 65,
GELU (tanh), the output projection untied) at batch 16 x 64, f32. Prints the device,
ms per step and tokens/s.
"""
import time

from tinygrad import Context, Device, Tensor, TinyJit, nn
from importlib.metadata import version

CONTEXT, C, H, L, V = 64, 128, 4, 4, 65
B, T = 16, CONTEXT


class Block:
    def __init__(self):
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def __call__(self, x):
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = q.scaled_dot_product_attention(k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(self.c_fc(self.ln_2(x)).gelu())


class GPT:
    def __init__(self):
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(CONTEXT, C)
        self.h = [Block() for _ in range(L)]
        self.ln_f, self.lm_head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)

    def __call__(self, idx):
        x = self.wte(idx) + self.wpe(Tensor.arange(T))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


Tensor.manual_seed(0)
model = GPT()
opt = nn.optim.AdamW(nn.state.get_parameters(model), lr=1e-3)
x = (Tensor.arange(B * T) % V).reshape(B, T).realize()
y = ((Tensor.arange(B * T) * 7) % V).realize()


@TinyJit
def step():
    with Context(TRAINING=1):
        opt.zero_grad()
        loss = model(x).reshape(B * T, V).sparse_categorical_crossentropy(y)
        loss.backward()
        opt.step()
        return loss.realize()


for _ in range(3):  # (TinyJit captures on its second call)
    step().item()
n, start = 0, time.perf_counter()
while time.perf_counter() - start < 5.0:
    step().item()
    n += 1
ms = (time.perf_counter() - start) / n * 1e3
print(f"tinygrad {version('tinygrad')} {Device.DEFAULT} TinyJit f32: {ms:.1f} ms/step, "
      f"{B * T / ms * 1e3:.0f} tokens/s")
