"""The benchmark's output: per run a line, a table per alert kind, a table per OOM class, the
goals that failed; as plain text, markdown (docs/benchmarks.md's table) or JSON."""
import json


def gib(n):
    return "n/a" if n is None else f"{n / (1 << 30):.2f}G"


def secs(s):
    return "-" if s is None else f"{s:.1f}s"


def truth_word(r):
    oom = r["oom"]
    slow = r.get("slow_leak")
    if oom is None and slow is not None:
        return f"slow leak {slow['rate_mib_min']:g} MiB/min for {slow['minutes']:g} min"
    if oom is None:
        return "healthy" + (" (near failure)" if r["near_failure"] else "")
    grows = "+growing-peak" if oom.get("peak_growth") else ""
    if oom["class"] == "leak":
        kind = f"leak, then {oom.get('second', '?')} (buys {oom.get('buys_s', 0):g}s)"
    else:
        kind = f"{oom['class']}{'+leak' if oom['leak'] else ''}{grows}"
    return (f"{kind} build-up {oom['build_up_s']:.0f}s "
            f"(R {gib(oom['request'])}, A {gib(oom['allocated'])}, P {gib(oom['pool'])}, "
            f"cap {gib(oom['limit'])}, free {gib(oom['gpu_free'])})")


def run_rows(results):
    rows = []
    for r in results:
        counts = {}
        for c in r["alerts"]:
            counts[c] = counts.get(c, 0) + 1
        alerts = ", ".join(f"{c}x{n}" if n > 1 else c for c, n in counts.items()) or "none"
        if r["oom"] is None:
            right = "-"
        else:
            got = r["failure"]["class"] if r["failure"] else "no failure alert"
            right = ("right" if r["class_right"] else f"WRONG ({got})")
            if r["oom"]["leak"]:
                right += ", leak named" if r["leak_named"] else ", leak NOT named"
        lead = f"{secs(r['lead_s'])} ({r['lead_kind']})" if r["lead_s"] is not None else "-"
        fa = sum(w["verdict"] == "false-alarm" for w in r["warnings"])
        slow = "-"
        if r.get("slow_leak") is not None:
            took = r.get("slow_leak_min")
            slow = "never" if took is None else f"{took:g} min"
        first = "-" if r.get("leak_first") is None else r["leak_first"]
        rows.append([r["name"], truth_word(r), alerts, right, first, lead, slow, str(fa)])
    return ["run", "truth", "alerts", "class", "leak named first", "lead",
            "slow leak warned after (minutes of climb)", "false alarms"], rows


def kind_rows(s):
    hours = s["healthy_hours"]
    rows = []
    for k in sorted(s["kinds"]):
        v = s["kinds"][k]
        rate = f"{v['false'] / hours:.0f}/h" if hours else "n/a"
        rows.append([k, str(v["true"]), str(v["off"]), f"{v['false']} ({rate})",
                     secs(v["median_lead_s"]), secs(v["worst_lead_s"])])
    head = ["warning kind", "true warnings", "off-cause", "false alarms (healthy)",
            "median lead", "worst lead"]
    return head, rows


def class_rows(s):
    rows = []
    for k in sorted(s["classes"]):
        v = s["classes"][k]
        rows.append([k, str(v["ooms"]), f"{v['right']}/{v['ooms']}",
                     f"{v['leaks_named']}/{v['leaks']}" if v["leaks"] else "-",
                     f"{v['leaks_first']}/{v['leaks']}" if v["leaks"] else "-",
                     f"{v['lead_met']}/{v['need_lead']}" if v["need_lead"] else "-"])
    return ["OOM class (truth)", "OOMs", "classified right", "leak named", "leak named first",
            "warned >= 20 s (build-up >= 30 s)"], rows


def text_table(head, rows):
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(x.replace("|", "/") for x in r) + " |"
                            for r in rows])


def totals(s):
    runs = s["runs"]
    healthy = [r for r in runs if r["healthy"]]
    fa = sum(w["verdict"] == "false-alarm" for r in healthy for w in r["warnings"])
    ooms = [r for r in runs if r["oom"]]
    rate = f"{fa / s['healthy_hours']:.0f}/h" if s["healthy_hours"] else "n/a"
    return (f"{len(runs)} run(s), held-out runs: {s['holdout']}; {len(ooms)} OOM(s), "
            f"{sum(bool(r['class_right']) for r in ooms)} classified right; {len(healthy)} "
            f"healthy over {s['healthy_hours'] * 60:.1f} min, {fa} false alarm(s) ({rate}); "
            f"goals failed: {len(s['goals_failed'])}")


def render(s, fmt):
    if fmt == "json":
        return json.dumps(s, indent=1)
    table = md_table if fmt == "markdown" else text_table
    parts = [table(*run_rows(s["runs"])), table(*kind_rows(s)), table(*class_rows(s)),
             totals(s)]
    parts += [f"goal failed: {g}" for g in s["goals_failed"]]
    return "\n\n".join(parts[:3]) + "\n\n" + "\n".join(parts[3:])
