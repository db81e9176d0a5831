"""Real CUDA memory faults, for scripts/gpu/memory_health_check.sh (issue 28).

usage: python3 memory_fault_programs.py cupy-illegal | torch-illegal | cupy-misaligned
cupy-illegal: a CuPy RawKernel writes 2**38 floats past a 16-float array.
torch-illegal: the same kernel writes past a torch tensor; torch sees the fault at its next sync.
cupy-misaligned: a CuPy RawKernel writes a double one byte into an array (a misaligned address).
Each prints what its framework raises and exits non-zero; nothing else on the GPU is touched."""
import sys

KERNEL = r'''
extern "C" __global__ void poke(float* p, long long off) { p[off] = 1.0f; }
extern "C" __global__ void odd(char* p) { *(double*)(p + 1) = 1.0; }
'''
FAR = 1 << 38

which = sys.argv[1]
import cupy as cp  # noqa: E402

module = cp.RawModule(code=KERNEL)
poke = module.get_function("poke")
if which == "cupy-illegal":
    x = cp.zeros(16, dtype=cp.float32)
    poke((1,), (1,), (x, cp.int64(FAR)))
    cp.cuda.runtime.deviceSynchronize()
elif which == "torch-illegal":
    import torch

    x = torch.zeros(16, device="cuda")
    poke((1,), (1,), (cp.uint64(x.data_ptr()), cp.int64(FAR)))
    y = x * 2
    torch.cuda.synchronize()
    print(y)
elif which == "cupy-misaligned":
    x = cp.zeros(16, dtype=cp.float64)
    module.get_function("odd")((1,), (1,), (x,))
    cp.cuda.runtime.deviceSynchronize()
else:
    sys.exit("unknown fault " + which)
