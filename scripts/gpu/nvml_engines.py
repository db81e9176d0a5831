"""Which video engines NVML says a GPU has: encoder/decoder utilisation and encoder capacity
queries, their return codes (0 success, 3 not supported). Plain ctypes, no packages."""
import ctypes

nv = ctypes.CDLL("libnvidia-ml.so.1")
nv.nvmlInit_v2()
n = ctypes.c_uint()
nv.nvmlDeviceGetCount_v2(ctypes.byref(n))
for i in range(n.value):
    h = ctypes.c_void_p()
    nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h))
    name = ctypes.create_string_buffer(96)
    nv.nvmlDeviceGetName(h, name, 96)
    u, p = ctypes.c_uint(), ctypes.c_uint()
    out = [name.value.decode()]
    for what in ["Encoder", "Decoder", "Jpg", "Ofa"]:
        fn = getattr(nv, f"nvmlDeviceGet{what}Utilization", None)
        rc = fn(h, ctypes.byref(u), ctypes.byref(p)) if fn else "absent"
        out.append(f"{what}Utilization rc={rc} value={u.value}")
    cap = ctypes.c_uint()
    out.append(f"EncoderCapacity(H264) rc={nv.nvmlDeviceGetEncoderCapacity(h, 0, ctypes.byref(cap))} value={cap.value}")
    print(f"GPU{i}: " + "; ".join(out))
