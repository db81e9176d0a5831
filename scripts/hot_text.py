#!/usr/bin/env python3
"""Writes the linker script that packs the functions gpumon runs while it watches at the start
of its code (assets/hot-text.ld, read by build.rs), from callgrind profiles of a release build
linked without it.

    python3 scripts/hot_text.py build              # target/hot-text/release/gpumon, unordered
    python3 scripts/hot_text.py profile DIR        # callgrind here: replays, the live screen, serve
    GPUMON_LINK_MAP=$PWD/target/hot-text/release.map cargo build --release
    bash scripts/gpu/touched_pages.sh DIR          # on a GPU machine, with that build carried
    python3 scripts/hot_text.py pages DIR          # DIR/*.pages to DIR/*.functions, with that map
    python3 scripts/hot_text.py write OUT.ld DIR...   # from every DIR/*.cg and DIR/*.functions

The profiled build is the release build as it is, linked without the script and with a link
map: callgrind names a stripped binary's functions by address, the map names them by symbol. A
symbol's hash (legacy mangling's `17h<hash>E`) changes with the toolchain and with every profile
setting, `strip` included, so a function whose name is the only one of its kind without it is
named that way; a generic function's instances share one name, so those that ran are named
whole (in a build with other hashes, a wheel's or a new toolchain's, they stay where they were).

NVML does not get past its first call under valgrind (tried on an H100; the driver's ioctls are
unknown to it), so the live screen and `serve` are profiled on a stand-in (scripts/fake_nvml.c).
What only a GPU makes run (memory health, NVML's events, MIG, real processes) comes from
the GPU machine as pages: scripts/gpu/touched_pages.sh lists the pages of the release build (as
it is, packed by the current script, with a link map) that a screen and `serve` touched there,
and `pages` names the functions on every touched page (a page holds several; the ones that did
not run cost no more than the page did). The script lists first what a
live screen and `serve` run (the live profiles, most run first, then those functions), then what
only replays and the demo run, so that on a GPU the code resident is the first part. The code
that reads a machine also goes in whole, by pattern (`LIVE`, about 220 KB);
scripts/gpu/perf_vs_rivals.sh shows how much of the binary stays resident on a GPU.
"""

import bisect
import collections
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "hot-text", "release", "gpumon")
MAP = os.path.join(ROOT, "target", "hot-text", "gpumon.map")
PRELOAD = os.path.join(ROOT, "target", "hot-text", "code_pages.so")
# The build touched_pages.sh measures, and its link map.
PACKED = os.path.join(ROOT, "target", "release", "gpumon")
PACKED_MAP = os.path.join(ROOT, "target", "hot-text", "release.map")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "recordings", "h100-probe-jobs.ndjson")
# The code that reads a real machine, as symbol patterns (legacy mangling: `_ZN` and each path
# segment with its length): its modules' functions, and every function named after one of their
# types (trait impls such as a probe file's `Deserialize`, drops, generics over them).
LIVE = ["_ZN6gpumon6source*", "_ZN*gpumon..source..*", "_ZN12nvml_wrapper*",
        "_ZN*nvml_wrapper..*", "_ZN10libloading*", "_ZN6gpumon7sampler*", "_ZN*gpumon..sampler..*"]
PROBED_JOB = """
import time, torch
GiB = 2**30
torch.cuda._initialized = True
for k in range(600):
    torch.cuda._stats[0] = {"allocated_bytes.all.current": (8 + k % 7) * GiB // 2,
        "reserved_bytes.all.current": 9 * GiB, "inactive_split_bytes.all.current": GiB,
        "num_alloc_retries": 0, "num_ooms": 0}
    time.sleep(1)
"""
LEGACY = re.compile(r"^(_ZN.*17h)[0-9a-f]{16}E$")


def build():
    # The release profile as it is: a profile setting (strip included) changes every hash.
    env = dict(os.environ, GPUMON_HOT_TEXT="off", GPUMON_LINK_MAP=MAP)
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--target-dir",
         os.path.join(ROOT, "target", "hot-text")],
        cwd=ROOT, env=env, check=True)
    # Preloaded by scripts/gpu/touched_pages.sh, which carries it to the GPU machine.
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", PRELOAD,
                    os.path.join(ROOT, "scripts", "gpu", "code_pages.c")], check=True)
    print(BIN)


def callgrind(out, argv):
    # Costs by instruction: a function reached by a jump (a tail call) is named by its caller's
    # in callgrind, but its instructions' addresses are its own.
    return ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}"] + argv


def screen(out, argv, keys, seconds, env):
    """The screen in a 120x40 tmux pane under callgrind, `keys` pressed one a second."""
    session = f"hot-text-{os.getpid()}"
    cmd = " ".join(callgrind(out, [BIN] + argv)) + " 2>/dev/null"
    setenv = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    "-e", "LANG=C.UTF-8"] + setenv + [cmd], check=True)
    time.sleep(seconds / 2)
    for key in keys:
        subprocess.run(["tmux", "send-keys", "-t", session, key], check=False)
        time.sleep(1)
    time.sleep(seconds / 2)
    # SIGTERM ends the screen as `q` does, whatever is open; callgrind then writes its profile.
    subprocess.run(["pkill", "-TERM", "-f", f"callgrind-out-file={out}"], check=False)
    for _ in range(240):
        if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode:
            return
        time.sleep(0.5)
    subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def serve(out, argv, seconds, env):
    """`serve` under callgrind, its /metrics and /snapshot read every second."""
    port = 19000 + os.getpid() % 1000
    proc = subprocess.Popen(callgrind(out, [BIN, "serve", "--listen", f"127.0.0.1:{port}"] + argv),
                            stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
    end = time.time() + seconds
    while time.time() < end:
        for path in ("/metrics", "/snapshot"):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).read()
            except OSError:
                pass
        time.sleep(1)
    proc.terminate()
    proc.wait(timeout=60)


def profile(out_dir):
    """Replays (the screen, the demo, `serve`), then the live screen and `serve` on the stand-in
    NVML (scripts/fake_nvml.c) with one probed process, this machine's /proc and its logs."""
    os.makedirs(out_dir, exist_ok=True)
    keys = ["j", "Tab", "k", "m", "Escape", "J", "J", "?", "Escape", "g", "g", "o", "o"]
    none = {"GPUMON_NVML_LIB": "/nonexistent/x"}
    screen(os.path.join(out_dir, "replay.cg"), ["--replay", FIXTURE, "--history", "10s"], keys, 40, none)
    screen(os.path.join(out_dir, "demo.cg"), ["--demo", "--speed", "4"], keys, 30, none)
    serve(os.path.join(out_dir, "serve.cg"), ["--replay", FIXTURE], 20, none)
    fake = os.path.join(ROOT, "target", "hot-text", "libnvidia-ml-fake.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", fake,
                    os.path.join(ROOT, "scripts", "fake_nvml.c")], check=True)
    # The process: a job with the allocator probe on a stand-in torch (tests/python/fakes) whose
    # pool grows and shrinks, so that what a probed job's pool costs a tick is profiled too.
    probes = os.path.join(ROOT, "target", "hot-text", "probes")
    fakes = os.path.join(ROOT, "tests", "python", "fakes")
    job = subprocess.Popen(["bash", "-c", f'eval "$("{BIN}" probe env --probe-dir {probes})"; '
                            f'PYTHONPATH="$PYTHONPATH:{fakes}" exec python3 -c "$0"', PROBED_JOB])
    live = {"GPUMON_NVML_LIB": fake, "FAKE_NVML_PIDS": str(job.pid), "GPUMON_PROBE_DIR": probes}
    try:
        screen(os.path.join(out_dir, "live.cg"), ["--interval", "1s"], keys, 40, live)
        serve(os.path.join(out_dir, "live-serve.cg"), [], 20, live)
    finally:
        job.kill()


def executed(path, binary_name):
    """The addresses of the instructions of `binary_name` that ran, with their counts."""
    obs, cost = {}, collections.Counter()
    ob, last, npos = None, 0, 1
    ref = re.compile(r"^(c?ob)=\((\d+)\)(?: (.*))?$")
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("positions:"):
                # "instr", or "instr line": the cost follows every position column.
                npos = len(line.split()) - 1
                continue
            m = ref.match(line)
            if m:
                kind, key, name = m.groups()
                if name is not None:
                    obs[key] = name.strip()
                if kind == "ob":
                    ob = os.path.basename(obs.get(key, ""))
                continue
            first = line.split(" ", 1)[0]
            if first.startswith("0x"):
                last = int(first, 16)
            elif first[:1] in "+-" and first[1:].strip().isdigit():
                last += int(first)
            elif first != "*":
                continue
            parts = line.split()
            if ob == binary_name and len(parts) > npos and parts[npos].isdigit():
                cost[last] += int(parts[npos])
    return cost


def sections(map_path):
    """The functions of the link map: (address, size, symbol) sorted, from its input sections."""
    out = []
    section = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S+:\(\.text\.(?:unlikely\.)?(\S+)\)$")
    with open(map_path, errors="replace") as f:
        for line in f:
            m = section.match(line)
            if m:
                out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    return sorted(out)


def touched(path):
    """The functions on the code pages of PACKED listed in a touched_pages.sh file (the binary's
    sha256, then the file offsets of the code pages that ran), with that first line. In
    `.text.hot` the functions are packed in the script's order, so a page there holds functions
    that ran, beside at most the last ones of the part before it."""
    with open(path) as f:
        head, *lines = f.read().splitlines()
    with open(PACKED, "rb") as f:
        if head.split()[-1] != hashlib.sha256(f.read()).hexdigest():
            sys.exit(f"{path}: pages of another build than {PACKED}")
    out = subprocess.run(["readelf", "-lW", PACKED], capture_output=True, text=True, check=True).stdout
    segments = []
    for line in out.splitlines():
        p = line.split()
        if p[:1] == ["LOAD"] and "E" in p[6:-1]:
            segments.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
    funcs = sections(PACKED_MAP)
    starts = [a for a, _, _ in funcs]
    names = set()
    for offset in (int(line, 16) for line in lines):
        for file_start, address, size in segments:
            page = address + offset - file_start
            if not file_start <= offset < file_start + size:
                continue
            # The functions that overlap [page, page + 4096): the one the page starts in, and on.
            i = max(bisect.bisect_right(starts, page) - 1, 0)
            while i < len(funcs) and funcs[i][0] < page + 4096:
                if funcs[i][0] + funcs[i][1] > page:
                    names.add(funcs[i][2])
                i += 1
    return head, names


def pages(d):
    """DIR/NAME.functions from each DIR/NAME.pages."""
    for name in sorted(os.listdir(d)):
        if name.endswith(".pages"):
            head, names = touched(os.path.join(d, name))
            out = os.path.join(d, name[: -len(".pages")] + ".functions")
            with open(out, "w") as f:
                f.write("\n".join([head] + sorted(names)) + "\n")
            print(f"{out}: {len(names)} functions on its pages")


def ran_in(cost, funcs):
    """The functions of `funcs` the instruction costs fall in, with their sums."""
    starts = [a for a, _, _ in funcs]
    ran = collections.Counter()
    for address, c in cost.items():
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and funcs[i][0] <= address < funcs[i][0] + funcs[i][1]:
            ran[funcs[i][2]] += c
    return ran


def write(out, dirs):
    """The script: what the live profiles ran, most run first; the functions on the pages a GPU
    machine ran; what only replays and the demo ran; then the live sources' modules."""
    live, other, on_gpu = collections.Counter(), collections.Counter(), set()
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".cg"):
                cost = live if name.startswith("live") else other
                cost.update(executed(os.path.join(d, name), "gpumon"))
            elif name.endswith(".functions"):
                with open(os.path.join(d, name)) as f:
                    on_gpu |= {line.strip() for line in f if line.strip() and line[0] != "#"}
    funcs = sections(MAP)
    kinds = collections.Counter(m.group(1) for m in (LEGACY.match(f[2]) for f in funcs) if m)
    live, other = ran_in(live, funcs), ran_in(other, funcs)
    # A page holds its neighbours too: a function that only replays and the demo ran stays with
    # them (if a GPU ran it after all, it costs a window at the end, not one in the middle).
    gpu_only = sorted(on_gpu - set(live) - set(other))
    replay_only = [n for n, _ in other.most_common() if n not in live]
    patterns, seen = [], set()
    for name in [n for n, _ in live.most_common()] + gpu_only + replay_only:
        m = LEGACY.match(name)
        # Unique without its hash: named so, which a new toolchain or profile does not change.
        pattern = m.group(1) + "*" if m and kinds[m.group(1)] == 1 else name
        if pattern not in seen and re.fullmatch(r"[A-Za-z0-9_.$*]+", pattern):
            seen.add(pattern)
            patterns.append(pattern)
    patterns += LIVE
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("/* The functions gpumon ran while it watched, most run first: written by\n"
                "   scripts/hot_text.py from callgrind profiles, read by build.rs. */\n"
                "SECTIONS {\n  .text.hot : {\n")
        for p in patterns:
            f.write(f"    *(.text.{p} .text.unlikely.{p})\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    os.replace(tmp, out)
    print(f"{out}: {len(patterns)} patterns: {len(live)} functions the live profiles ran, "
          f"{len(gpu_only)} more on the code pages a GPU machine ran, {len(replay_only)} only "
          "replays and the demo ran")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("build", "profile", "pages", "write"):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        build()
    elif sys.argv[1] == "profile" and len(sys.argv) == 3:
        if not shutil.which("valgrind") or not shutil.which("tmux"):
            sys.exit("hot_text.py profile needs valgrind and tmux")
        profile(sys.argv[2])
    elif sys.argv[1] == "pages" and len(sys.argv) == 3:
        pages(sys.argv[2])
    elif sys.argv[1] == "write" and len(sys.argv) >= 4:
        write(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
