// Exp2F32: 2^x of a float as every backend computes it, bit for bit: x = n + f with
// n = rint(x) and |f| <= 1/2; 2^f by a degree-6 polynomial (relative error 2e-9 on
// [-1/2, 1/2]) in Horner's form with fused multiply-adds; 2^n as two factors that are normal
// floats each, so that a result among the subnormals is rounded once. Within 1 ulp of the
// exact value for every float (0.86% of the floats in [-160, 130] are 1 ulp off the
// correctly rounded one); exp2 of -inf, of x <= -150 and of NaN are 0, 0 and NaN, of
// x >= 128 and inf, inf. The 0 below -150 is chosen, not computed: arithmetic into the
// subnormals costs x86 a microcode assist (a hundred cycles or more), and a softmax's masked
// scores (-inf) are often most of its inputs. Each step is an IEEE operation, rounded once
// (no contraction, fmaf fused), so the interpreter, constant folding, the C kernels (the
// prelude's uopc_exp2f, which vectorizes) and CUDA's give the same bits.
#pragma once

namespace uopc {

float Exp2F32(float x);

}  // namespace uopc
