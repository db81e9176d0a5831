"""The verdicts of scripts/gpu/memory_health_check.sh (issue 28), as JSON on stdout.

usage: python3 memory_health_compare.py OUTDIR
Compares every memory-health reading of `gpumon snapshot` with `nvidia-smi -q -x` (zeros are
values too; n/a must be N/A there), and reports event registration, the kernel log's Xid lines,
the Xid events gpumon recorded, and how `gpumon explain` classified each fault log."""
import json
import os
import sys
import xml.etree.ElementTree as ET

out = sys.argv[1]


def path(name):
    return os.path.join(out, name)


def read_json(name):
    try:
        with open(path(name)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"unreadable": str(e)}


def num(el, tag):
    """An integer under `el`, None for N/A or absent."""
    t = el.findtext(tag) if el is not None else None
    if t is None or t.strip() in ("N/A", ""):
        return None
    t = t.strip()
    if t in ("Yes", "No"):
        return t == "Yes"
    try:
        return int(t)
    except ValueError:
        return t


def smi_counts(errs, which):
    """(corrected, uncorrected) of nvidia-smi's volatile or aggregate block, summed as NVML's
    totals (SRAM and DRAM); older drivers print single_bit/double_bit totals instead."""
    el = errs.find(which) if errs is not None else None
    if el is None:
        return None
    if el.find("single_bit") is not None:
        return num(el.find("single_bit"), "total"), num(el.find("double_bit"), "total")
    parts = [num(el, t) for t in ("sram_correctable", "dram_correctable")]
    unc = [num(el, t) for t in ("sram_uncorrectable_parity", "sram_uncorrectable_secded",
                                "dram_uncorrectable", "sram_uncorrectable")]
    if all(p is None for p in parts):
        return None
    return sum(p or 0 for p in parts), sum(u or 0 for u in unc)


def check(name, smi, ours, checks):
    checks.append({"reading": name, "nvidia_smi": smi, "gpumon": ours, "equal": smi == ours})


summary = {}
snap = read_json("snapshot.json")
try:
    root = ET.parse(path("nvsmi-q.xml")).getroot()
    smi_gpus = {g.findtext("uuid"): g for g in root.findall("gpu")}
except (OSError, ET.ParseError) as e:
    smi_gpus, summary["nvidia_smi_xml"] = {}, str(e)
gpus = []
for g in snap.get("gpus", []):
    s = smi_gpus.get(g["uuid"])
    h = g.get("health") or {}
    na = h.get("unavailable", {})
    checks = []
    if s is None:
        gpus.append({"uuid": g["uuid"], "error": "not in nvidia-smi -q -x"})
        continue
    mode = s.find("ecc_mode")
    on = lambda t: None if t in (None, "N/A") else t == "Enabled"  # noqa: E731
    m = h.get("ecc_mode") or {}
    check("ecc_mode.current", on(mode.findtext("current_ecc")), m.get("current"), checks)
    check("ecc_mode.pending", on(mode.findtext("pending_ecc")), m.get("pending"), checks)
    errs = s.find("ecc_errors")
    for which, key in (("volatile", "ecc_volatile"), ("aggregate", "ecc_aggregate")):
        c = smi_counts(errs, which)
        ours = h.get(key)
        check(f"{key}.corrected", c and c[0], ours and ours["corrected"], checks)
        check(f"{key}.uncorrected", c and c[1], ours and ours["uncorrected"], checks)
    rr = s.find("remapped_rows")
    ours = h.get("remapped_rows") or {}
    for tag, key in (("remapped_row_corr", "corrected"), ("remapped_row_unc", "uncorrected"),
                     ("remapped_row_pending", "pending"), ("remapped_row_failure", "failure")):
        check(f"remapped_rows.{key}", num(rr, tag), ours.get(key), checks)
    rp = s.find("retired_pages")
    ours = h.get("retired_pages") or {}
    sbe = num(rp.find("multiple_single_bit_retirement"), "retired_count") if rp is not None else None
    dbe = num(rp.find("double_bit_retirement"), "retired_count") if rp is not None else None
    check("retired_pages.single_bit", sbe, ours.get("single_bit"), checks)
    check("retired_pages.double_bit", dbe, ours.get("double_bit"), checks)
    check("retired_pages.pending", num(rp, "pending_retirement"), ours.get("pending"), checks)
    gpus.append({"uuid": g["uuid"], "name": g["name"], "checks": checks,
                 "gpumon_unavailable": na, "xid": g.get("xid")})
summary["gpus"] = gpus
summary["all_readings_equal"] = bool(gpus) and all(
    c["equal"] for g in gpus for c in g.get("checks", [{"equal": False}]))

notices, events, failures = [], [], []
try:
    with open(path("record.ndjson")) as f:
        for line in f:
            try:
                s = json.loads(line)
            except ValueError:
                continue
            notices += s.get("notices", [])
            events += s.get("events", [])
            failures += s.get("failures", [])
except OSError as e:
    notices.append(f"record.ndjson unreadable: {e}")
summary["event_notices"] = [n for n in notices if "event" in n.lower() or "kernel log" in n]
summary["event_registration"] = (
    "refused: " + "; ".join(n for n in notices if "not heard" in n)
    if any("not heard" in n for n in notices) else "no refusal said")
summary["xid_events_recorded"] = events
summary["failures_recorded"] = [
    {"log": f["log"], "fault": f.get("fault"), "message": f["message"][:160]} for f in failures]
with open(path("dmesg-nvrm.txt")) as f:
    summary["kernel_xid_lines"] = [l.rstrip() for l in f if "NVRM: Xid" in l]
rec = read_json("explain-record.json")
summary["record_alerts"] = [
    {"class": a["class"], "title": a["title"], "confidence": a.get("confidence")}
    for r in (rec.get("recordings") or []) for a in r.get("alerts", [])]
faults = {}
for name in ("cupy-illegal", "torch-illegal"):
    try:
        status = open(path(f"fault-{name}.status")).read().strip()
    except OSError:
        status = None
    one = {"program": status}
    for key, file in (("alone", f"explain-{name}.json"), ("with_dmesg", f"explain-{name}-dmesg.json")):
        e = read_json(file)
        one[key] = [{"class": x["class"], "source": x.get("source"), "confidence": x["confidence"],
                     "xid": (x.get("xid") or {}).get("code")} for x in e.get("failures", [])]
    faults[name] = one
summary["faults"] = faults
print(json.dumps(summary, indent=1))
