"""Targets the tests lower for by name (UOPC_TARGET's text form, core/target.h)."""

# sm_90 as backends/cuda/gpu_target.h's table gives it (tests/backends/cuda/gpu_target_test
# pins the same text, and gpu_kernels_test checks the two agree).
SM90 = ("class=gpu arch=sm_90 features= registers=255 cores=132 l1d=0/0 l2=50M l3=0 warp=32 " +
        "threads_per_block=1024 shared_per_block=227K " +
        "matrix=16x8x16:f16->f32,16x8x16:bf16->f32,16x8x8:f32->f32")
