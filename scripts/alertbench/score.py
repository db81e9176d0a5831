"""Scores gpumon's alerts (`gpumon explain --format json` on each fixture's recording) against
the fixture's truth.json: per run a line, per alert kind a table row, and the goals (--check).
A leaking OOM is also scored on whether the leak is named first (leak_first): its first warning
a `leak`, its failure alert naming the leak before any other cause with the kept tensor as the
first remedy; required of a leak that fragments (truth class "leak").
A run whose truth has a slow leak (truth.slow_leak) is scored in minutes of climb before its
first `leak` warning for that pid (SLOW_GOALS); that warning counts as a true one even when the
run then fails of another cause (the slow-leak run's fragmentation OOM)."""
import json
import os
import re
import statistics
import subprocess
import sys

from . import report

LEAD_GOAL_S = 20.0     # a warning at least this far ahead ...
BUILD_UP_GOAL_S = 30.0  # ... of every OOM whose cause built up for this long
FAILURE_SLACK_MS = 5000  # a failure alert may be stamped a little before the job's own OOM line
# A slow leak is warned within this many minutes of its climb: 3 at 150 MiB/min or faster (the
# rate a run must show to be held to it: 100), 20 at 20 MiB/min or faster; slower ones, no goal.
SLOW_GOALS = ((100.0, 3.0), (20.0, 20.0))

OWN_LIMIT = re.compile(r"\b(cap|capped|allowed|limit|fraction|bytes_limit|set_limit|pool)\b", re.I)
GPU_FREE = re.compile(r"\b(GPU ?\d* (?:is )?full|full|free memory|GPU's free|free)\b", re.I)


def time_to_limit_cause(alert):
    """time-to-limit is about the process's own limit when its title names a cap or limit, about
    the GPU's free memory when it names free memory or a full GPU (the limit wins on both)."""
    title = alert.get("title") or ""
    if OWN_LIMIT.search(title):
        return {"pool-limit"}
    if GPU_FREE.search(title):
        return {"device-full"}
    return {"pool-limit"} if alert.get("pid") is not None else {"device-full"}


# Which warning classes point at which truth class (a warning not here is never a lead).
CAUSES = {
    "fragmentation-risk": {"fragmentation"},
    "pool-near-limit": {"pool-limit"},
    "exit-at-limit": {"pool-limit"},
    "leak": {"pool-limit", "device-full", "leak"},
    # The line of code a leak's block maps show climbing: the leak itself, at its site.
    "leak-site": {"pool-limit", "device-full", "leak"},
    # A rank growing away from its job's other ranks: that rank's leak, named for the job.
    "rank-grows-alone": {"pool-limit", "device-full", "leak"},
    # Ranks holding a second context on another rank's GPU (no pid: the job's, on that GPU).
    "rank-extra-context": {"device-full"},
    "time-to-limit": time_to_limit_cause,
    "time-to-full": {"device-full"},
    "growth-step": {"device-full"},
    "releasable-cache": {"device-full"},
    "idle-preallocation": {"device-full"},
    "growing-peak": {"pool-limit", "device-full"},
}


# Warnings that name a leak of their process (a rank growing alone is its leak, said for the job).
LEAK_CLASSES = {"leak", "rank-grows-alone"}


def causes(alert):
    c = CAUSES.get(alert["class"], set())
    return c(alert) if callable(c) else c


def explain(gpumon, recording):
    out = subprocess.run([gpumon, "explain", "--format", "json", recording],
                         capture_output=True, text=True, env=dict(os.environ,
                         GPUMON_NVML_LIB="/nonexistent/libnvidia-ml.so.1"))
    if out.returncode != 0:
        raise RuntimeError(f"{gpumon} explain {recording}: {out.stderr.strip()}")
    recs = json.loads(out.stdout).get("recordings") or []
    return recs[0]["alerts"] if recs else []


# Warnings about memory one process holds for the others on its GPU: they name the holder, and
# point at a device-full OOM of any process on that GPU.
FOR_THE_GPU = {"idle-preallocation", "releasable-cache"}


def names_target(alert, oom):
    if alert.get("pid") == oom["pid"]:
        return True
    return (oom["class"] == "device-full"
            and (alert.get("pid") is None or alert["class"] in FOR_THE_GPU)
            and alert.get("gpu") in (None, oom.get("gpu", 0)))


def score_run(t, alerts):
    """One run's result: its failure alert, class right, leak named, lead, and each warning's
    verdict (lead / off-cause / false alarm / excused by near_failure)."""
    warnings = [a for a in alerts if a["level"] == "suspected"]
    failures = [a for a in alerts if a["level"] == "failure"]
    slow = t.get("slow_leak")
    r = {"name": t["name"], "group": t["group"], "healthy": t["healthy"],
         "near_failure": t["near_failure"], "recorded_s": t["recorded_s"], "oom": t["oom"],
         "alerts": [a["class"] for a in alerts], "warnings": [], "failure": None,
         "class_right": None, "leak_named": None, "leak_first": None, "lead_s": None,
         "lead_kind": None,
         "slow_leak": slow, "slow_leak_min": None}
    oom = t["oom"]
    if slow is not None:
        first = min((a["at_ms"] for a in warnings if a["class"] == "leak"
                     and a.get("pid") == slow["pid"]
                     and (oom is None or a["at_ms"] < oom["t_ms"])), default=None)
        if first is not None:
            r["slow_leak_min"] = round((first - slow["start_ms"]) / 60_000, 1)
    for a in warnings:
        on_slow = (slow is not None and a["class"] == "leak" and a.get("pid") == slow["pid"]
                   and (oom is None or a["at_ms"] < oom["t_ms"]))
        if oom is not None and (a["at_ms"] < oom["t_ms"] and names_target(a, oom)
                                and oom["class"] in causes(a)):
            verdict = "lead"
        elif on_slow:
            verdict = "slow-leak"
        elif oom is None and slow is None:
            verdict = "excused" if t["near_failure"] else "false-alarm"
        else:
            verdict = "off-cause"
        lead = (oom["t_ms"] - a["at_ms"]) / 1000 if verdict == "lead" else None
        r["warnings"].append({"class": a["class"], "verdict": verdict, "lead_s": lead,
                              "at_ms": a["at_ms"]})
    if oom is None:
        return r
    f = next((a for a in failures if a.get("pid") == oom["pid"]
              and a["at_ms"] >= oom["t_ms"] - FAILURE_SLACK_MS), None)
    r["failure"] = f and {"class": f["class"], "confidence": f.get("confidence"),
                          "title": f.get("title"), "remedy": f.get("remedy")}
    r["class_right"] = bool(f) and f["class"] == oom["class"]
    if oom["leak"]:
        r["leak_named"] = any(a["class"] in LEAK_CLASSES and a.get("pid") == oom["pid"]
                              and a["at_ms"] < oom["t_ms"] for a in warnings) or \
            bool(f and "leak" in (f.get("title") or "").lower())
        r["leak_first"] = leak_first(oom, warnings, r["failure"])
    leads = [w for w in r["warnings"] if w["verdict"] == "lead"]
    if leads:
        first = min(leads, key=lambda w: w["at_ms"])
        r["lead_s"], r["lead_kind"] = round(first["lead_s"], 1), first["class"]
    return r


LEAK_REMEDY = "Find what keeps memory alive"


def leak_first(oom, warnings, failure):
    """Whether the leak of a leaking OOM is named first: the first warning for its process
    before it is a `leak` (a rank's: `rank-grows-alone`), and the failure alert's title names the leak before any other cause
    (class "leak", or "... after a leak") with the kept tensor as its first remedy. "yes", or
    "no: " and what came first."""
    before = sorted((a for a in warnings if a.get("pid") == oom["pid"]
                     and a["at_ms"] < oom["t_ms"]), key=lambda a: a["at_ms"])
    if before and before[0]["class"] not in ("leak", "rank-grows-alone"):
        return f"no: {before[0]['class']} warned first"
    if not failure:
        return "no: no failure alert"
    title = failure.get("title") or ""
    named = failure["class"] == "leak" or f"{failure['class']} after a leak" in title
    if not named or not (failure.get("remedy") or "").startswith(LEAK_REMEDY):
        first = "another process's idle pool" if "restart it with" in title else \
            f"{failure['class']}'s remedy"
        return f"no: the failure names {first} first"
    return "yes"


def goals(results):
    """The failed goals, one line each."""
    out = []
    for r in results:
        oom = r["oom"]
        if oom is not None:
            if not r["class_right"]:
                got = r["failure"]["class"] if r["failure"] else "no failure alert"
                out.append(f"{r['name']}: OOM classified {got}, truth {oom['class']}")
            if oom["class"] == "leak" and r.get("leak_first") != "yes":
                out.append(f"{r['name']}: a leak that fragments, leak not named first "
                           f"({r.get('leak_first')})")
            if oom["build_up_s"] >= BUILD_UP_GOAL_S and (r["lead_s"] or 0) < LEAD_GOAL_S:
                out.append(f"{r['name']}: cause built up {oom['build_up_s']}s, lead "
                           f"{r['lead_s'] if r['lead_s'] is not None else 'none'}")
        slow = r.get("slow_leak")
        if slow is not None:
            limit = next((m for rate, m in SLOW_GOALS if slow["rate_mib_min"] >= rate), None)
            took = r["slow_leak_min"]
            if limit is not None and (took is None or took > limit):
                out.append(f"{r['name']}: slow leak ({slow['rate_mib_min']} MiB/min) warned "
                           f"after {took if took is not None else 'never'} min of climb, "
                           f"goal {limit:g} min")
        fa = [w["class"] for w in r["warnings"] if w["verdict"] == "false-alarm"]
        if fa:
            out.append(f"{r['name']}: false alarm(s) on a healthy run: {', '.join(fa)}")
    return out


def kinds(results):
    """Per alert kind: true warnings, off-cause, false alarms, leads (first of the kind per OOM)."""
    rows = {}
    for r in results:
        firsts = {}
        for w in r["warnings"]:
            k = rows.setdefault(w["class"], {"true": 0, "off": 0, "false": 0, "excused": 0,
                                             "leads": []})
            key = {"lead": "true", "slow-leak": "true", "off-cause": "off",
                   "false-alarm": "false", "excused": "excused"}[w["verdict"]]
            k[key] += 1
            if w["verdict"] == "lead":
                firsts[w["class"]] = max(firsts.get(w["class"], 0), w["lead_s"])
        for c, lead in firsts.items():
            rows[c]["leads"].append(lead)
    for k in rows.values():
        k["median_lead_s"] = round(statistics.median(k["leads"]), 1) if k["leads"] else None
        k["worst_lead_s"] = round(min(k["leads"]), 1) if k["leads"] else None
    return rows


def classes(results):
    """Per truth class: OOMs, classified right, leaks named, warned >= 20 s where required."""
    rows = {}
    for r in results:
        oom = r["oom"]
        if oom is None:
            continue
        k = rows.setdefault(oom["class"], {"ooms": 0, "right": 0, "leaks": 0, "leaks_named": 0,
                                           "leaks_first": 0, "need_lead": 0, "lead_met": 0})
        k["ooms"] += 1
        k["right"] += bool(r["class_right"])
        k["leaks"] += bool(oom["leak"])
        k["leaks_named"] += bool(r["leak_named"])
        k["leaks_first"] += r.get("leak_first") == "yes"
        if oom["build_up_s"] >= BUILD_UP_GOAL_S:
            k["need_lead"] += 1
            k["lead_met"] += (r["lead_s"] or 0) >= LEAD_GOAL_S
    return rows


def load(fixtures, holdout):
    runs = sorted(d for d in os.listdir(fixtures)
                  if os.path.isfile(os.path.join(fixtures, d, "truth.json")))
    held = [d for d in runs if d.startswith("ho-")]
    pick = {"exclude": [d for d in runs if d not in held], "only": held, "include": runs}[holdout]
    return [(d, json.load(open(os.path.join(fixtures, d, "truth.json")))) for d in pick]


def main(fixtures, gpumon, holdout, fmt, check):
    try:
        chosen = load(fixtures, holdout)
    except (OSError, ValueError) as e:
        print(f"alert_bench: cannot read the fixtures under {fixtures}: {e}", file=sys.stderr)
        return 2
    if not chosen:
        print(f"alert_bench: no fixtures (RUN/truth.json) under {fixtures}", file=sys.stderr)
        return 2
    results = []
    for d, t in chosen:
        rec = os.path.join(fixtures, d, "recording.ndjson.zst")
        try:
            results.append(score_run(t, explain(gpumon, rec)))
        except (OSError, RuntimeError, ValueError) as e:
            print(f"alert_bench: {e}", file=sys.stderr)
            return 2
    summary = {"holdout": holdout, "runs": results, "kinds": kinds(results),
               "classes": classes(results), "goals_failed": goals(results),
               "healthy_hours": sum(r["recorded_s"] for r in results if r["healthy"]) / 3600}
    print(report.render(summary, fmt))
    return 1 if check and summary["goals_failed"] else 0
