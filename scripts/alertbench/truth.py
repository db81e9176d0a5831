"""A run's truth from the job's own figures (the rule is written out in scripts/alert_bench.py's
docstring and docs/benchmarks.md's "Alerts on real jobs" section; keep the three the same).
An OOM the figures call fragmentation whose floor of allocated climbed into it is a leak first
(leak_first), as allocator-probe.md's truth rule now says of "a leak that fragments"."""
import json
import os

from . import oomtext, series

MiB = 1 << 20
FRAG_SHARE = 0.05      # stranded memory must be at least this share of the pool
LEAK_MIN_S = 20.0      # a leak's floor climbs for at least this long
LEAK_HEADROOM = 0.5    # ... and by at least this share of the headroom it started with
NEAR_SHARE = 0.05      # healthy: a step's peak within this share of the binding limit
SLOW_MIN_MINUTES = 5   # a slow leak: the per-minute floor of allocated climbs this many minutes
SLOW_MIN_RISE = 64 * MiB  # ... by at least this much


def read_log(path):
    """The job's JSON lines ({"ev": ...}); other lines are skipped."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("{\"ev\""):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def read_recording(path):
    """The recording's samples (header and other lines skipped)."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if "at_ms" in v and "gpus" in v:
                out.append(v)
    return out


def framework(events, oom_text=""):
    """From the start line's version key, else from the OOM text's own shape."""
    start = next((e for e in events if e.get("ev") == "start"), {})
    for key, name in (("torch", "pytorch"), ("jax", "jax"), ("cupy", "cupy")):
        if key in start:
            return name
    if oomtext.pytorch(oom_text):
        return "pytorch"
    if oomtext.xla(oom_text) is not None:
        return "jax"
    if oomtext.cupy(oom_text):
        return "cupy"
    return None


def figures(fw, oom, pid, sample):
    """request, allocated A, pool P, stranded S, cap (process cap / pool limit), gpu_free and
    holders at the failing request, from the OOM text first, the job's "oom" line after."""
    text = oom.get("text") or ""
    f = {"request": oom.get("request"), "allocated": None, "pool": None, "stranded": None,
         "cap": None, "gpu_free": None, "holders": []}
    if fw == "pytorch" and oomtext.pytorch(text, pid):
        f.update(oomtext.pytorch(text, pid))
        f.pop("gpu_total", None)
    elif fw == "jax":
        f["request"] = oomtext.xla(text) or f["request"]
        # In use at the failure = the peak (the oom line is read after temporaries were freed).
        f["allocated"] = oom.get("peak_allocated") or oom.get("allocated")
        f["pool"], f["cap"] = oom.get("reserved"), oom.get("limit")
    elif fw == "cupy" and oomtext.cupy(text):
        c = oomtext.cupy(text)
        f["request"], f["pool"], f["cap"] = c["request"], c["pool"], c["cap"]
        used = oom.get("allocated")
        f["allocated"] = min(used, c["pool"]) if used is not None and c["pool"] else c["pool"]
    if f["stranded"] is None and f["pool"] is not None and f["allocated"] is not None:
        f["stranded"] = max(0, f["pool"] - f["allocated"])
    if f["gpu_free"] is None:
        f["gpu_free"] = oom.get("gpu_free")
    if f["gpu_free"] is None and sample:
        f["gpu_free"] = sample["gpus"][0]["memory"].get("free")
    if not f["holders"] and sample:
        f["holders"] = [{"pid": p["pid"], "bytes": p.get("device_memory")}
                        for p in sample["processes"] if p.get("device_memory")]
    return f


def classify(f):
    """fragmentation | pool-limit | device-full | unknown, from the figures (see the rule)."""
    R, A, P, S, cap, free = (f[k] for k in ("request", "allocated", "pool", "stranded", "cap",
                                            "gpu_free"))
    if R is None:
        return "unknown"
    limits = [x for x in (cap, (P + free) if P is not None and free is not None else None)
              if x is not None]
    L = min(limits) if limits else None
    if (S is not None and P and S >= R and S >= FRAG_SHARE * P and A is not None
            and (L is None or A + R <= L)):
        return "fragmentation"
    room = free is None or free >= R
    if cap is not None and P is not None and P + R > cap and room:
        return "pool-limit"
    if free is not None and free < R and (cap is None or P is None or P + R <= cap):
        return "device-full"
    return "unknown"


def job_points(events, key):
    """[(t_s, figure)] from the job's step lines."""
    return [(e["t"], e.get(key)) for e in events if e.get("ev") == "step"]


def expandable(job, events):
    """Whether the job's PyTorch allocator ran with expandable segments (its environment in
    meta.json, else its start line's "alloc_conf"): inactive_split_bytes then stays 0."""
    env = job.get("env") or {}
    start = next((e for e in events if e.get("ev") == "start"), {})
    conf = (env.get("PYTORCH_ALLOC_CONF") or env.get("PYTORCH_CUDA_ALLOC_CONF")
            or start.get("alloc_conf") or "")
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def stranded_points(events, whole_free=False):
    """[(t_s, stranded)]: PyTorch's inactive split bytes, else (and always with `whole_free`, under
    expandable segments) the pool's free part reserved - allocated."""
    out = []
    for e in events:
        if e.get("ev") != "step":
            continue
        s = None if whole_free else e.get("stranded")
        if s is None and e.get("reserved") is not None and e.get("allocated") is not None:
            s = e["reserved"] - e["allocated"]
        out.append((e["t"], s))
    return out


def gpu_used_points(samples, gpu_uuid):
    out = []
    for s in samples:
        for g in s["gpus"]:
            if gpu_uuid is None or g.get("uuid") == gpu_uuid:
                out.append((s["at_ms"] / 1000, (g.get("memory") or {}).get("used")))
                break
    return out


def leak(cls, f, events, t_oom):
    """A leak: the class is pool-limit or device-full, the per-second floor of allocated climbed
    (series.climb) for LEAK_MIN_S or more and by at least LEAK_HEADROOM of the headroom it began
    with (binding limit − floor at the climb's start)."""
    if cls not in ("pool-limit", "device-full"):
        return False, None
    c = series.climb(series.per_second(job_points(events, "allocated")), t_oom)
    if not c:
        return False, None
    t0, v0, t1, v1 = c
    limits = [x for x in (f["cap"], (f["pool"] + f["gpu_free"]) if f["pool"] is not None
                          and f["gpu_free"] is not None else None) if x is not None]
    if not limits:
        return False, c
    return (t1 - t0 >= LEAK_MIN_S and v1 - v0 >= LEAK_HEADROOM * (min(limits) - v0)), c


def peak_growth(cls, f, events, t_oom, is_leak):
    """A growing peak: the class is pool-limit or device-full, not a leak, and the per-second
    ceiling of the steps' own peaks (peak_allocated; the jobs reset it every step) climbed
    (series.climb) for LEAK_MIN_S or more and by at least LEAK_HEADROOM of the headroom it began
    with (binding limit - that peak at the climb's start)."""
    if cls not in ("pool-limit", "device-full") or is_leak:
        return False, None
    c = series.climb(series.per_second(job_points(events, "peak_allocated"), pick=max), t_oom)
    if not c:
        return False, None
    t0, v0, t1, v1 = c
    limits = [x for x in (f["cap"], (f["pool"] + f["gpu_free"]) if f["pool"] is not None
                          and f["gpu_free"] is not None else None) if x is not None]
    if not limits:
        return False, c
    return (t1 - t0 >= LEAK_MIN_S and v1 - v0 >= LEAK_HEADROOM * (min(limits) - v0)), c


def build_up(cls, events, samples, gpu_uuid, t_oom, alloc_climb, peak_climb=None,
             whole_free=False):
    """Seconds the cause built up before the OOM (0 when it did not): how long allocated's floor
    climbed (pool-limit; for a growing peak, the ceiling of the steps' peaks), stranded's floor
    (fragmentation; the whole free part under expandable segments), the GPU's used memory
    (device-full)."""
    if cls == "pool-limit":
        c = peak_climb or alloc_climb
    elif cls == "fragmentation":
        c = series.climb(series.per_second(stranded_points(events, whole_free)), t_oom)
    elif cls == "device-full":
        c = series.climb(gpu_used_points(samples, gpu_uuid), t_oom)
    else:
        c = None
    return round(t_oom - c[0], 1) if c else 0.0


def slow_leak(events, before=None):
    """A slow leak: the job's per-minute floor of allocated (the smallest step figure in each
    whole minute since its first step) climbs, walking back from the last whole minute (before
    `before`, its OOM, if any), with nothing released (no minute's floor more than series.TOL
    above a later one) for at least SLOW_MIN_MINUTES minutes, by at least SLOW_MIN_RISE, rising
    in at least two minutes of three. The climb starts where its first rising minute's floor
    was read. Returns {"start_ms", "rate_mib_min", "minutes"} or None."""
    pts = [(t, v) for t, v in job_points(events, "allocated") if v is not None
           and (before is None or t < before)]
    if not pts:
        return None
    t0 = pts[0][0]
    minutes = {}
    for t, v in pts:
        k = int((t - t0) // 60)
        if k not in minutes or v < minutes[k][1]:
            minutes[k] = (t, v)
    last = max(minutes)
    if pts[-1][0] - t0 < (last + 1) * 60:
        last -= 1  # the last minute is not whole
    if last < 0 or any(k not in minutes for k in range(last + 1)):
        return None
    floors = [minutes[k] for k in range(last + 1)]
    start, lowest_later = last, floors[last][1]
    for i in range(last - 1, -1, -1):
        if floors[i][1] > lowest_later + series.TOL:
            break
        lowest_later = min(lowest_later, floors[i][1])
        start = i
    run = floors[start:]
    # The climb begins where the floor first rose.
    while len(run) > 1 and run[1][1] <= run[0][1]:
        run = run[1:]
    steps = [b[1] - a[1] for a, b in zip(run, run[1:])]
    rise = run[-1][1] - run[0][1] if run else 0
    if (len(steps) < SLOW_MIN_MINUTES or rise < SLOW_MIN_RISE
            or 3 * sum(d > 0 for d in steps) < 2 * len(steps)):
        return None
    span_min = (run[-1][0] - run[0][0]) / 60
    return {"start_ms": int(run[0][0] * 1000), "minutes": round(span_min, 1),
            "rate_mib_min": round(rise / MiB / span_min, 1)}


def binding_limit(oom):
    """L = min(cap, pool + GPU free) at the OOM, from a truth's oom figures (None if unknown)."""
    limits = [x for x in (oom.get("limit"), (oom["pool"] + oom["gpu_free"])
                          if oom.get("pool") is not None and oom.get("gpu_free") is not None
                          else None) if x is not None]
    return min(limits) if limits else None


def leak_first(t):
    """A leak that fragments (allocator-probe.md, "a leak that fragments"): an OOM the figures
    call fragmentation is a leak first when the job's allocated floor climbed into it, by more
    than what sat stranded at it. The climb is the per-second floors' (t["series"]) by the leak
    rule (LEAK_MIN_S or more, LEAK_HEADROOM of the headroom it began with), else the slow leak
    that ran up to it (t["slow_leak"], its rate times its minutes). The class becomes "leak",
    with fragmentation second: "second", the leak's rate (bytes/s), "buys_s" (what the stranded
    bytes last at that rate: all expandable segments would buy) and build_up_s from the climb's
    start. Works on run_truth's result and on a fixture's truth.json alike; returns t."""
    oom = t.get("oom")
    if not oom or oom["class"] != "fragmentation":
        return t
    pts = [(p[0] / 1000, p[1]) for p in t.get("series", {}).get(str(oom["pid"]), [])]
    c = series.climb(pts, oom["t_ms"] / 1000)
    limit = binding_limit(oom)
    rate = rise = start = None
    if c and limit is not None:
        t0, v0, t1, v1 = c
        if t1 - t0 >= LEAK_MIN_S and v1 - v0 >= LEAK_HEADROOM * (limit - v0):
            rate, rise, start = (v1 - v0) / (t1 - t0), v1 - v0, t0
    slow = t.get("slow_leak")
    if rate is None and slow and slow["pid"] == oom["pid"]:
        rate = slow["rate_mib_min"] * MiB / 60
        rise, start = rate * slow["minutes"] * 60, slow["start_ms"] / 1000
    stranded = oom.get("stranded") or 0
    if rate is None or rate <= 0 or rise < stranded:
        return t
    oom.update({"class": "leak", "second": "fragmentation", "leak": True,
                "leak_rate": round(rate), "buys_s": round(stranded / rate, 1),
                "build_up_s": round(oom["t_ms"] / 1000 - start, 1)})
    return t


def near_failure(events):
    """Healthy runs: did the job's own figures come within one request of failing? The jobs do
    not log their requests, so: an OOM it caught (num_ooms > 0), or a step whose own peak came
    within NEAR_SHARE of the binding limit (the cap or pool limit, else reserved + GPU free).
    A cache flush that succeeded (num_alloc_retries) is not one."""
    for e in events:
        if e.get("ev") != "step":
            continue
        if (e.get("ooms") or 0) > 0:
            return True
        limits = [e.get("limit")]
        if e.get("reserved") is not None and e.get("gpu_free") is not None:
            limits.append(e["reserved"] + e["gpu_free"])
        limits = [x for x in limits if x]
        peak = e.get("peak_allocated") or e.get("allocated")
        if limits and peak is not None and peak >= (1 - NEAR_SHARE) * min(limits):
            return True
    return False


def sample_at(samples, t_s):
    before = [s for s in samples if s["at_ms"] / 1000 <= t_s]
    return before[-1] if before else (samples[0] if samples else None)


def compact_series(events):
    """Per-second [t_ms, allocated floor, reserved then] of one job."""
    out, seen = [], {}
    for e in events:
        if e.get("ev") != "step" or e.get("allocated") is None:
            continue
        k = int(e["t"])
        if k not in seen or e["allocated"] < seen[k][1]:
            seen[k] = [int(e["t"] * 1000), e["allocated"], e.get("reserved")]
    out = [seen[k] for k in sorted(seen)]
    return out


def run_truth(run_dir):
    meta = json.load(open(os.path.join(run_dir, "meta.json")))
    samples = read_recording(os.path.join(run_dir, "recording.ndjson"))
    logs = [read_log(os.path.join(run_dir, f"p{i}.log")) for i in range(len(meta["jobs"]))]
    truth = {"name": meta["name"], "group": meta["group"], "healthy": True, "oom": None,
             "near_failure": False, "recorded_s": 0.0, "series": {}}
    if samples:
        truth["recorded_s"] = round((samples[-1]["at_ms"] - samples[0]["at_ms"]) / 1000, 1)
    for job, events in zip(meta["jobs"], logs):
        truth["series"][str(job["pid"])] = compact_series(events)
        oom = next((e for e in events if e.get("ev") == "oom"), None)
        if oom is None or truth["oom"] is not None:
            continue
        truth["healthy"] = False
        pid, fw, t_oom = job["pid"], framework(events, oom.get("text") or ""), oom["t"]
        sample = sample_at(samples, t_oom)
        gpu_uuid = next((p.get("gpu_uuid") for s in samples for p in s["processes"]
                         if p["pid"] == pid), None)
        gpu = next((g["index"] for s in samples for g in s["gpus"] if g.get("uuid") == gpu_uuid),
                   0)
        f = figures(fw, oom, pid, sample)
        cls = classify(f)
        is_leak, c = leak(cls, f, events, t_oom)
        grows, pc = peak_growth(cls, f, events, t_oom, is_leak)
        whole_free = expandable(job, events)
        truth["oom"] = {
            "t_ms": int(t_oom * 1000), "pid": pid, "gpu": gpu, "framework": fw, "class": cls,
            "leak": is_leak, "request": f["request"], "allocated": f["allocated"],
            "pool": f["pool"], "stranded": f["stranded"], "limit": f["cap"],
            "gpu_free": f["gpu_free"], "holders": f["holders"],
            "peak_growth": grows, "expandable": whole_free,
            "build_up_s": build_up(cls, events, samples, gpu_uuid, t_oom, c,
                                   pc if grows else None, whole_free),
            "text": (oom.get("text") or "")[:300],
        }
    for job, events in zip(meta["jobs"], logs):
        oom = truth["oom"]
        if oom is not None and oom["pid"] != job["pid"]:
            continue
        slow = slow_leak(events, oom["t_ms"] / 1000 if oom else None)
        if slow is not None:
            truth["slow_leak"] = dict(slow, pid=job["pid"])
            truth["healthy"] = False
            break
    if truth["healthy"]:
        truth["near_failure"] = any(near_failure(ev) for ev in logs)
    return leak_first(truth)
