"""A peer of bench/gpt_bench.cc: the bench GPT's training step in JAX (XLA on the CPU), the
whole step (forward, backward, AdamW) one jitted function, as a JAX user writes it.

    $(bench/install_peers.sh) bench/jax_gpt_step.py [--threads N]

The model is bench/peer_gpt.py's (4 layers, dim 128, 4 heads, context 64, vocabulary 65,
GELU (tanh), the output projection untied) at batch 16 x 64, f32. Prints ms per step and
tokens/s. --threads 1 turns XLA's multi-threaded Eigen off (its only switch for one thread);
otherwise XLA uses every core, which is the thread count on the bench machines.
"""
import argparse
import os
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=0, help="1: one thread; 0: XLA's default")
args = parser.parse_args()
if args.threads == 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402  (after XLA_FLAGS)
import jax.numpy as jnp  # noqa: E402

CONTEXT, C, H, L, V = 64, 128, 4, 4, 65
B, T = 16, CONTEXT


def init(key):
    def normal(k, shape):
        return jax.random.normal(k, shape, jnp.float32) * 0.02
    keys = iter(jax.random.split(key, 64))
    p = {"wte": normal(next(keys), (V, C)), "wpe": normal(next(keys), (CONTEXT, C)),
         "ln_f": (jnp.ones(C), jnp.zeros(C)), "lm_head": normal(next(keys), (C, V)), "h": []}
    for _ in range(L):
        p["h"].append({
            "ln_1": (jnp.ones(C), jnp.zeros(C)), "ln_2": (jnp.ones(C), jnp.zeros(C)),
            "c_attn": (normal(next(keys), (C, 3 * C)), jnp.zeros(3 * C)),
            "c_proj": (normal(next(keys), (C, C)), jnp.zeros(C)),
            "c_fc": (normal(next(keys), (C, 4 * C)), jnp.zeros(4 * C)),
            "mlp_proj": (normal(next(keys), (4 * C, C)), jnp.zeros(C))})
    return p


def layer_norm(x, wb):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * wb[0] + wb[1]


def linear(x, wb):
    return x @ wb[0] + wb[1]


def forward(p, idx):
    x = p["wte"][idx] + p["wpe"][:T]
    mask = jnp.triu(jnp.ones((T, T), bool), 1)
    for b in p["h"]:
        q, k, v = jnp.split(linear(layer_norm(x, b["ln_1"]), b["c_attn"]), 3, axis=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / (C // H) ** 0.5)
        att = jax.nn.softmax(jnp.where(mask, -jnp.inf, att), axis=-1)
        x = x + linear((att @ v).transpose(0, 2, 1, 3).reshape(B, T, C), b["c_proj"])
        h = jax.nn.gelu(linear(layer_norm(x, b["ln_2"]), b["c_fc"]), approximate=True)
        x = x + linear(h, b["mlp_proj"])
    return layer_norm(x, p["ln_f"]) @ p["lm_head"]


def loss_fn(p, x, y):
    logits = forward(p, x).reshape(B * T, V)
    return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1).mean()


@jax.jit
def step(p, m, v, t, x, y):
    """One AdamW step (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01: PyTorch's)."""
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
    c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
    p = jax.tree.map(lambda p, m, v: p * (1 - 1e-3 * 0.01) - 1e-3 * (m / c1) /
                     (jnp.sqrt(v / c2) + 1e-8), p, m, v)
    return p, m, v, loss


params = init(jax.random.PRNGKey(0))
m = jax.tree.map(jnp.zeros_like, params)
v = jax.tree.map(jnp.zeros_like, params)
x = (jnp.arange(B * T) % V).reshape(B, T)
y = (jnp.arange(B * T) * 7) % V
params, m, v, loss = step(params, m, v, 1.0, x, y)  # compiles
loss.block_until_ready()
n, start = 0, time.perf_counter()
while time.perf_counter() - start < 5.0:
    params, m, v, loss = step(params, m, v, float(n + 2), x, y)
    loss.block_until_ready()
    n += 1
ms = (time.perf_counter() - start) / n * 1e3
threads = "1 thread" if args.threads == 1 else f"{os.cpu_count()} cores (XLA's default)"
print(f"jax {jax.__version__} cpu jit f32, {threads}: {ms:.1f} ms/step, {B * T / ms * 1e3:.0f} tokens/s")
