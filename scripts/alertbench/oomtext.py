"""The figures in a framework's out-of-memory text (reference: oom-formats-and-nvml.md §1):
PyTorch's "Tried to allocate R ... of which F is free ... N allowed; ... A is allocated by
PyTorch, and S is reserved by PyTorch but unallocated", JAX/XLA's "Out of memory while trying to
allocate N bytes" (or "16.01MiB"), CuPy's "Out of memory allocating N bytes (allocated so far: A
bytes, limit set to: L bytes)". Sizes come back in bytes; a figure the text lacks is None."""
import re

UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
         "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}
SIZE = r"[\d.]+ ?(?:bytes|[KMGT]iB|B)"

PT_REQ = re.compile(r"Tried to allocate (?P<req>" + SIZE + r")\. GPU (?P<dev>\d+) has a total "
                    r"capac(?:i)?ty of (?P<total>" + SIZE + r") of which (?P<free>" + SIZE +
                    r") is free\.")
PT_ALLOWED = re.compile(r"(?P<allowed>" + SIZE + r") allowed;")
PT_ALLOC = re.compile(r"Of the allocated memory (?P<alloc>" + SIZE + r") is allocated by PyTorch, "
                      r"(?:with (?P<priv>" + SIZE + r") allocated in private pools \(e\.g\., CUDA "
                      r"Graphs\), )?and (?P<ru>" + SIZE + r") is reserved by PyTorch but unallocated")
PT_PROC = re.compile(r"(?:Including non-PyTorch memory, this process|Process (?P<pid>\d+)) has "
                     r"(?P<used>" + SIZE + r") memory in use")
XLA = re.compile(r"Out of memory while trying to allocate (?:(?P<n>\d+) bytes|(?P<h>[\d.]+[KMGT]?i?B))")
CUPY = re.compile(r"Out of memory allocating (?P<n>[\d,]+) bytes(?: \(allocated so far: "
                  r"(?P<t>[\d,]+) bytes(?:, limit set to: (?P<l>[\d,]+) bytes)?\))?")


def size(text):
    """'2.31 GiB' / '16.01MiB' / '0 bytes' -> bytes (int)."""
    m = re.fullmatch(r"([\d.]+) ?([A-Za-z]+)", text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(round(float(m.group(1)) * UNITS[m.group(2).lower()]))


def pytorch(text, own_pid=None):
    """PyTorch's figures: request, gpu_free, allocated, stranded (reserved but unallocated),
    pool (= allocated + stranded), cap (the "allowed" figure) and the holders it names."""
    m = PT_REQ.search(text)
    if not m:
        return None
    out = {"request": size(m["req"]), "gpu_free": size(m["free"]), "gpu_total": size(m["total"]),
           "cap": None, "allocated": None, "stranded": None, "pool": None, "holders": []}
    a = PT_ALLOWED.search(text)
    if a:
        out["cap"] = size(a["allowed"])
    a = PT_ALLOC.search(text)
    if a:
        out["allocated"] = size(a["alloc"]) + (size(a["priv"]) if a["priv"] else 0)
        out["stranded"] = size(a["ru"])
        out["pool"] = out["allocated"] + out["stranded"]
    for p in PT_PROC.finditer(text):
        pid = int(p["pid"]) if p["pid"] else own_pid
        out["holders"].append({"pid": pid, "bytes": size(p["used"])})
    return out


def xla(text):
    """JAX/XLA's request in bytes, or None."""
    m = XLA.search(text)
    if not m:
        return None
    return int(m["n"]) if m["n"] else size(m["h"])


def cupy(text):
    """CuPy's request, allocated-so-far (the pool's total) and limit, or None."""
    m = CUPY.search(text)
    if not m:
        return None
    num = lambda s: int(s.replace(",", "")) if s else None  # noqa: E731
    return {"request": num(m["n"]), "pool": num(m["t"]), "cap": num(m["l"])}
