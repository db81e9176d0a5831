#!/usr/bin/env bash
# The distributed-job runs of issue 33 on a 2-GPU machine, each under `gpumon record` with the
# allocator probe, their logs kept byte for byte: DDP under torchrun with rank 0 leaking to its cap
# (torchrun.log), the same started rank by rank with srun's variables and a 20 s NCCL timeout
# (rank0.log, rank1.log), torch.load without map_location on every rank, a healthy FSDP job, a
# two-process JAX job whose process 1 runs out of memory, and NCCL's memory outside the pool.
# Usage (repo root, target/release/gpumon carried): bash scripts/gpu/dist/capture.sh OUT [RUN...]
# RUN: torchrun-leak rank-by-rank load fsdp jax nccl-memory (default: all).
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
o=$1; shift; mkdir -p "$o"; bin=$PWD/target/release/gpumon; here=$PWD/scripts/gpu/dist
runs=${*:-torchrun-leak rank-by-rank load fsdp jax nccl-memory}
eval "$("$bin" probe env --interval 500ms)"
nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader >"$o/gpus.txt"
leftovers="dist/ddp_job.py|dist/jax_dist.py|dist/nccl_memory.py"
after_record() {  # logs and recording explained together; what was captured listed
  "$bin" explain "$o/$1"/*.log "$o/$1/recording.ndjson" >"$o/$1/explain.txt" 2>&1
  ls -la "$o/$1" >>"$o/$1/status.txt"
}
. "$PWD/scripts/gpu/record_under.sh"
smi_during() {  # smi_during NAME SECONDS: nvidia-smi's process list after SECONDS
  (sleep "$2"; nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader >"$o/$1/nvidia-smi.txt"; "$bin" snapshot --format json >"$o/$1/snapshot.json") &
}
for run in $runs; do
  echo "== $run $(date +%T)"
  case $run in
    torchrun-leak)
      smi_during torchrun-leak 30
      record torchrun-leak 240 sh -c "CAP_GIB=14 torchrun --nproc-per-node 2 $here/ddp_job.py leak0 >torchrun.log 2>&1" ;;
    rank-by-rank)
      mkdir -p "$o/rank-by-rank"; smi_during rank-by-rank 30
      record rank-by-rank 300 sh -c "for r in 0 1; do RANK=\$r LOCAL_RANK=\$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=\$r SLURM_LOCALID=\$r SLURM_NODEID=0 SLURM_NTASKS=2 CAP_GIB=14 NCCL_TIMEOUT_S=20 python3 $here/ddp_job.py leak0 >rank\$r.log 2>&1 & done; wait" ;;
    load)
      mkdir -p "$o/load"; smi_during load 25
      record load 120 sh -c "RUN_S=20 torchrun --nproc-per-node 2 $here/ddp_job.py load >torchrun.log 2>&1" ;;
    fsdp)
      mkdir -p "$o/fsdp"; smi_during fsdp 25
      record fsdp 120 sh -c "STEPS=400 torchrun --nproc-per-node 2 $here/ddp_job.py fsdp >torchrun.log 2>&1" ;;
    jax)
      record jax 120 sh -c "for p in 0 1; do CUDA_VISIBLE_DEVICES=\$p XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_MEM_FRACTION=0.15 JAX_COORDINATOR_ADDRESS=127.0.0.1:12355 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=\$p python3 $here/jax_dist.py >process\$p.log 2>&1 & done; wait" ;;
    nccl-memory)
      mkdir -p "$o/nccl-memory"
      (cd "$o/nccl-memory" && timeout 120 torchrun --nproc-per-node 2 "$here/nccl_memory.py" "$bin" >torchrun.log 2>&1; echo "exit $?" >status.txt) ;;
  esac
done
echo "== done $(date +%T)"
