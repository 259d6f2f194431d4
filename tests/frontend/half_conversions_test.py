"""uopc's f32 <-> bf16 and f16 conversions (half_conversions_peer.cc) against independent
references: numpy's float16 and ml_dtypes' bfloat16 (from PyPI, in the reference venv that
third_party/install_pyref.sh makes). Exact bits, except that a NaN need only stay a NaN.

    python3 half_conversions_test.py DIR   # DIR: what half_conversions_peer wrote
"""
import sys

import numpy as np

d = sys.argv[1]
failed = False


def load(name, dtype):
    return np.fromfile(f"{d}/{name}", dtype=dtype)


def check(what, got, want, inputs, nan_of):
    """got, want: integer bit patterns; nan_of: whether a pattern of the result is a NaN."""
    global failed
    same = (got == want) | (nan_of(got) & nan_of(want))
    bad = np.flatnonzero(~same)
    width = got.dtype.itemsize * 2
    if len(bad):
        failed = True
        print(f"FAIL {what}: {len(bad)} of {len(got)} differ, e.g.")
        for i in bad[:8]:
            print(f"  0x{int(inputs[i]):0{inputs.dtype.itemsize * 2}x} -> uopc 0x{int(got[i]):0{width}x},"
                  f" reference 0x{int(want[i]):0{width}x}")
    else:
        print(f"ok {what}: {len(got)} patterns")


f32_nan = lambda b: (b & 0x7F800000 == 0x7F800000) & (b & 0x007FFFFF != 0)
patterns = np.arange(65536, dtype=np.uint16)
inputs = load("from_f32.inputs", np.uint32)
formats = [("f16", np.float16, lambda b: (b & 0x7C00 == 0x7C00) & (b & 0x03FF != 0))]
try:
    import ml_dtypes

    formats.append(("bf16", ml_dtypes.bfloat16, lambda b: (b & 0x7F80 == 0x7F80) & (b & 0x007F != 0)))
except ImportError:
    print("FAIL bf16: no ml_dtypes in", sys.executable, "(third_party/install_pyref.sh installs it)")
    failed = True
for name, ref, nan in formats:
    with np.errstate(over="ignore", invalid="ignore"):  # (inf and NaN are among the inputs)
        to_f32 = patterns.view(ref).astype(np.float32).view(np.uint32)
        from_f32 = inputs.view(np.float32).astype(ref).view(np.uint16)
    for where, prefix in [("kernel", ""), ("host", "host_")]:
        check(f"{name} -> f32 ({where})", load(f"{prefix}to_f32.{name}", np.uint32), to_f32,
              patterns, f32_nan)
        check(f"f32 -> {name} ({where})", load(f"{prefix}from_f32.{name}", np.uint16), from_f32,
              inputs, nan)
sys.exit(1 if failed else 0)
