#!/usr/bin/env bash
# The job-end stories of issue 39 on a 2-GPU machine, each under `gpumon record` with the allocator
# probe, their logs kept byte for byte: every rank leaking alike under torch.multiprocessing.spawn
# (common) and started rank by rank (alike), a rank whose data loader blocks (stuck), a healthy
# torchrun job killed from outside (outside), a JAX job that survives an allocation failure
# (survived), a healthy job that ends near its cap (nearcap). Usage (repo root, target/release/gpumon carried):
#   bash scripts/gpu/stories/capture.sh OUT [RUN...]   (RUN: common alike stuck outside survived nearcap)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
o=$1; shift; mkdir -p "$o"; bin=$PWD/target/release/gpumon; here=$PWD/scripts/gpu/stories
runs=${*:-common alike stuck outside survived nearcap}
eval "$("$bin" probe env --interval 500ms)"
export GPUMON_PROBE_STILL_S=5
leftovers="stories/torch_job.py|stories/jax_survives.py"
after_record() {  # the logs alone, and the recording, each explained
  "$bin" explain "$o/$1"/*.log >"$o/$1/explain-logs.txt" 2>&1
  "$bin" explain "$o/$1/recording.ndjson" >"$o/$1/explain-recording.txt" 2>&1
}
. "$PWD/scripts/gpu/record_under.sh"
for run in $runs; do
  echo "== $run $(date +%T)"
  case $run in
    common)
      record common 150 sh -c "CAP_GIB=12 python3 $here/torch_job.py common >job.log 2>&1" ;;
    alike)
      record alike 150 sh -c "for r in 0 1; do RANK=\$r LOCAL_RANK=\$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29544 SLURM_JOB_ID=4343 SLURM_STEP_ID=0 SLURM_PROCID=\$r SLURM_LOCALID=\$r SLURM_NODEID=0 SLURM_NTASKS=2 CAP_GIB=12 python3 $here/torch_job.py alike >rank\$r.log 2>&1 & done; wait" ;;
    stuck)
      record stuck 200 sh -c "STUCK_AT=40 NCCL_TIMEOUT_S=45 TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 torchrun --nproc-per-node 2 $here/torch_job.py stuck >torchrun.log 2>&1" ;;
    outside)
      record outside 120 sh -c "torchrun --nproc-per-node 2 $here/torch_job.py healthy >torchrun.log 2>&1 & p=\$!; sleep 35; kill -TERM \$p; wait \$p" ;;
    survived)
      record survived 150 sh -c "for p in 0 1; do CUDA_VISIBLE_DEVICES=\$p XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_MEM_FRACTION=0.1 JAX_COORDINATOR_ADDRESS=127.0.0.1:12366 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=\$p python3 $here/jax_survives.py >process\$p.log 2>&1 & done; wait" ;;
    nearcap)
      record nearcap 60 sh -c "CAP_GIB=8 RUN_S=15 python3 $here/torch_job.py nearcap >job.log 2>&1" ;;
  esac
done
echo "== done $(date +%T)"
