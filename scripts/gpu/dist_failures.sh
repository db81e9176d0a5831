#!/usr/bin/env bash
# A distributed job's failure, three ways, each with a gpumon recording made at the same time:
#   1. DDP under torchrun, one log for both ranks, rank 0 leaking to its 14 GiB cap;
#   2. the same started rank by rank (each rank's own log), NCCL's timeout 40 s;
#   3. a two-process JAX job whose process 1 dies.
# Then `gpumon explain` of each set of logs and of each recording, in text and JSON.
# Usage: bash scripts/gpu/dist_failures.sh OUTDIR   (on a machine with 2 GPUs)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
o=$(realpath -m "$1"); mkdir -p "$o"
here=$(cd "$(dirname "$0")" && pwd); bin=$here/../../target/release/gpumon
w=$(mktemp -d /tmp/dist.XXXX); cd "$w"
record() { "$bin" record "$o/$1.ndjson" --duration "$2" --interval 1s 2> "$o/$1.record.err"; }

# 1. torchrun: one log; rank 0 runs out of memory, torchrun stops rank 1 and writes its summary.
record torchrun 150s & rec=$!; sleep 2
CAP_GIB=14 LEAK_RANK=0 torchrun --nproc-per-node 2 --master-port 29511 "$here/ddp_leak.py" > torchrun.log 2>&1
echo "torchrun exited $?"; wait "$rec"

# 2. rank by rank, each rank's own log; rank 1 waits in its all-reduce until the watchdog (40 s).
record rank-by-rank 200s & rec=$!; sleep 2
pids=()
for r in 0 1; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 CAP_GIB=14 \
    LEAK_RANK=0 NCCL_TIMEOUT_S=40 python3 "$here/ddp_leak.py" > rank$r.log 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"; echo "ranks exited"; wait "$rec"

# 3. JAX: process 1 exits after the first all-gather; process 0 hears of it and ends.
record jax 60s & rec=$!; sleep 2
# The variables JAX's own launch scripts set, so gpumon knows the processes as one job's ranks.
export JAX_COORDINATOR_ADDRESS=127.0.0.1:29513 JAX_NUM_PROCESSES=2
CUDA_VISIBLE_DEVICES=0 JAX_PROCESS_ID=0 python3 "$here/jax_two_processes.py" 0 29513 > process0.log 2>&1 & p0=$!
CUDA_VISIBLE_DEVICES=1 JAX_PROCESS_ID=1 python3 "$here/jax_two_processes.py" 1 29513 > process1.log 2>&1 & p1=$!
wait "$p0" "$p1"; echo "jax exited"; wait "$rec"

cp torchrun.log rank0.log rank1.log process0.log process1.log "$o/"
for set in "torchrun.log" "rank0.log rank1.log" "process0.log process1.log"; do
  name=$(echo "$set" | cut -d' ' -f1 | sed 's/\.log//')
  # shellcheck disable=SC2086
  "$bin" explain $set > "$o/explain-$name.txt" 2>&1
  # shellcheck disable=SC2086
  "$bin" explain --format json $set > "$o/explain-$name.json" 2>&1
done
for r in torchrun rank-by-rank jax; do
  "$bin" explain "$o/$r.ndjson" > "$o/explain-$r-recording.txt" 2>&1
done
grep -h -A3 "job failure" "$o"/explain-*.txt
grep -h -B1 -A12 "failure, " "$o"/explain-*-recording.txt | head -120
rm -rf "$w"
