#!/usr/bin/env bash
# Records gpumon's demo on a real GPU: JAX with default preallocation, a PyTorch process growing
# step by step, a CuPy pool, then a PyTorch job that hits a fragmentation OOM and one that hits a
# device-full OOM, their output going to log files gpumon finds through /proc/PID/fd. Every job
# runs with the allocator probe (`gpumon probe env`), so the demo shows their pools.
#
# The recording holds block maps with their sites: the PyTorch jobs record their allocation
# history from their start (`--record-allocations`), so every map names the lines of code that
# hold the memory; the probe writes a map at each OOM by itself, `gpumon record` asks for maps
# during a leak or fragmentation alert, and this script asks the growing PyTorch job (twice, so
# the second map says what climbed), the JAX job and the CuPy job for one while `gpumon record`
# runs, the way `M` does on the screen: a `gpumon.request/1 map ID` line written atomically, mode
# 0600, as `<pid>.request` in the probe directory (docs/memory-map-format.md). While a job records
# its history the probe does not look for its pool's largest free block between maps, so the
# fragmenting job gets no fragmentation-risk warning before its OOM (its OOM map has the holes).
#
# Usage (repo root, with target/release/gpumon built): bash scripts/gpu/record_demo.sh OUTDIR
# Then check OUTDIR/maps.txt (the maps and sites `snapshot --replay` finds in the recording) and
# copy OUTDIR/demo.ndjson to assets/demo.ndjson and compress it as the binary embeds it:
# `zstd -19 --zstd=wlog=17 -f assets/demo.ndjson` (a unit test checks that assets/demo.ndjson.zst reads back as
# assets/demo.ndjson).
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here=$(cd "$(dirname "$0")" && pwd); bin=$PWD/target/release/gpumon; o=$1
mkdir -p "$o" /tmp/demo && cd /tmp/demo
eval "$("$bin" probe env --record-allocations)" || exit 1

# Asks pid $1's probe for a map now (what `M` writes): the id is the time in ms and a 1 ("a
# person asked"); the probe answers in its next figures file and writes <pid>.map.json.
ask_map() {
    local id tmp
    id=$(( $(date +%s%3N) * 10 + 1 ))
    tmp="$GPUMON_PROBE_DIR/.$1.request.tmp"
    (umask 077 && printf 'gpumon.request/1 map %s\n' "$id" > "$tmp") &&
        mv -f "$tmp" "$GPUMON_PROBE_DIR/$1.request" &&
        echo "asked pid $1 for a map (id $id)" >> "$o/requests.txt"
}

"$bin" record "$o/demo.ndjson" --duration "${DEMO_S:-120}s" --interval 1s 2>"$o/record.err" &
rec=$!
sleep 2
HOLD_S=105 python3 "$here/jax_oom.py" prealloc > jax.log 2>&1 &
jax=$!
sleep 8
HOLD_S=95 python3 "$here/cupy_oom.py" hold > cupy.log 2>&1 &
cupy=$!
sleep 4
GROW_GIB=6 HOLD_S=50 python3 "$here/torch_frag.py" grow > grow.log 2>&1 &
grow=$!
sleep 10
ask_map "$jax"
ask_map "$cupy"
sleep 8
ask_map "$grow"   # halfway up its steps
sleep 12
ask_map "$grow"   # near its top: the second map says which site climbed
sleep 15
FRAG_WAIT_S=8 HOLD_S=6 python3 "$here/torch_frag.py" fill > train.log 2>&1
sleep 4
HOLD_S=4 python3 "$here/torch_frag.py" full > finetune.log 2>&1
wait $rec
cp /tmp/demo/*.log "$o/" 2>/dev/null
wait
# What the recording holds: each map (at OOM or asked) and the sites it names.
"$bin" snapshot --replay "$o/demo.ndjson" --format text > "$o/snapshot.txt" 2>&1
sed -n '/^Block maps/,$p' "$o/snapshot.txt" > "$o/maps.txt"
grep -c ' blocks' "$o/maps.txt" | sed 's/^/site lines: /' >> "$o/requests.txt"
cat "$o/requests.txt"
