#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU: builds depengine with CUDA,
# runs the GPU tests (the CUDA device and its CUDA graph replays, the ops on CUDA, depbench's GPU
# scenarios, collectives and KVStores of CUDA tensors, NCCL between GPUs and under
# mpirun with 2 processes, the MLP example on CUDA) and the
# GPU benchmarks, and prints a
# short table last.
# Stays within 5 minutes (each step gets what is left of a 290 s budget).
#
#   scripts/gpu-check.sh [BUILD_DIR]            (default: build-gpu)
#   scripts/gpu-check.sh --prebuilt BUNDLE_DIR  programs packed by
#                                               scripts/gpu-bundle.sh elsewhere
#
# Exit status: 0 when the tests passed, 1 when they failed, 2 without a GPU.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
deadline=$((SECONDS + 290))
left() { local s=$((deadline - SECONDS)); echo $((s > 1 ? s : 1)); }

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi failed)" >&2
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -n 1)
[[ -x /usr/local/cuda/bin/nvcc ]] && export PATH="/usr/local/cuda/bin:$PATH"

source "$root/scripts/bundle-env.sh"

if [[ ${1:-} == --prebuilt ]]; then
  bundle=$(cd "${2:?--prebuilt needs the folder scripts/gpu-bundle.sh made}" && pwd)
  out=$bundle
  echo "== prebuilt programs ($gpu)"
  use_bundle "$bundle"
else
  build=${1:-$root/build-gpu}
  out=$build
  # Compile for this GPU only ("9.0" -> 90): the shortest build.
  arch=$(echo "$gpu" | awk -F', ' '{ gsub(/\./, "", $3); print $3 }')
  [[ $arch =~ ^[0-9]+$ ]] || arch="80;90"
  echo "== configure ($gpu)"
  timeout "$(left)" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEPENGINE_WITH_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=$arch" >"$build.configure.log" 2>&1 ||
    { tail -n 30 "$build.configure.log"; exit 1; }
  echo "== build"
  timeout "$(left)" cmake --build "$build" -j "$(nproc)" \
    --target device_cuda_tests device_cuda_bench tensor_tests depbench_scenario_tests mlp_train comm_tests \
    comm_nccl_tests comm_mpi_tests kvstore_tests \
    >"$build.build.log" 2>&1 || { tail -n 30 "$build.build.log"; exit 1; }
  bin=$out/bin
  mkdir -p "$bin"
  for program in device_cuda_tests device_cuda_bench tensor_tests depbench_scenario_tests mlp_train comm_tests \
    comm_nccl_tests comm_mpi_tests kvstore_tests; do
    ln -sf "$(find "$build" -type f -name "$program" -perm -u+x | head -n 1)" "$bin/$program"
  done
fi

# Runs a Google Test program; prints one line per test and keeps the summary.
summaries=""
test_rc=0
run_tests() {  # label program [args...]
  local label=$1 log=$out/gpu-$1.log
  shift
  echo "== $label"
  timeout "$(left)" "$@" 2>&1 | tee "$log" | grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|: Failure$|what\(\)'
  local rc=${PIPESTATUS[0]}
  [[ $rc == 0 ]] || test_rc=1
  summaries+="$label: $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$log" | tr '\n' ' ')(exit $rc); "
}
run_tests device "$bin/device_cuda_tests"
run_tests ops "$bin/tensor_tests" --gtest_filter='CudaOps*'
run_tests depbench "$bin/depbench_scenario_tests" --gtest_filter='*Cuda*'
run_tests comm "$bin/comm_tests" --gtest_filter='*StandIns*'
run_tests kvstore "$bin/kvstore_tests" --gtest_filter='*StandIns*'
run_tests nccl "$bin/comm_nccl_tests"
# Two processes sharing the GPU: NCCL inside each, MPI between them.
if command -v mpirun >/dev/null; then
  run_tests comm-mpi env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
    mpirun -np 2 --oversubscribe "$bin/comm_mpi_tests" --gtest_filter='*Nccl*:*StandIns*'
else
  echo "== comm-mpi: skipped, no mpirun here (Debian: openmpi-bin)"
fi

echo "== MLP example on CUDA"
timeout "$(left)" "$bin/mlp_train" --device cuda --epochs 5 2>&1 | tee "$out/gpu-mlp.log" | tail -n 4
mlp_rc=${PIPESTATUS[0]}
[[ $mlp_rc == 0 ]] || test_rc=1

echo "== GPU benchmarks"
timeout "$(left)" "$bin/device_cuda_bench" --benchmark_min_time=0.3 --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv \
  >"$out/gpu-bench.csv" 2>"$out/gpu-bench.err"
bench_rc=$?

# Median ns_per_op of each "<workload>/<system>" from the CSV (name first,
# counter last).
ns() { awk -F, -v n="\"$1/real_time_median\"" '$1 == n { printf "%.0f", $NF }' "$out/gpu-bench.csv"; }
row() {  # workload baseline system target-text ratio-direction
  local base sys ratio
  base=$(ns "$1/$2"); sys=$(ns "$1/$3")
  if [[ -n $base && -n $sys && $sys != 0 && $base != 0 ]]; then
    if [[ $5 == speedup ]]; then ratio=$(awk -v a="$base" -v b="$sys" 'BEGIN { printf "%.2fx faster", a / b }')
    else ratio=$(awk -v a="$base" -v b="$sys" 'BEGIN { printf "%.2fx of %s", b / a, "'"$2"'" }'); fi
  else ratio="n/a"; fi
  printf "%-22s %-11s %12s  %-10s %12s  %-18s %s\n" "$1" "$2" "${base:-n/a}" "$3" "${sys:-n/a}" "$ratio" "$4"
}

echo
echo "GPU: $gpu"
echo "tests: ${summaries}mlp exit $mlp_rc; benchmarks exit $bench_rc"
printf "%-22s %-11s %12s  %-10s %12s  %-18s %s\n" workload baseline "ns/op" system "ns/op" result target
echo "(medians of 5 repetitions)"
row overlap_copy_compute sync async "async >= 1.8x faster" speedup
row launch_overhead direct depengine "<= 1.3x of direct" overhead
row launch_overhead direct direct_events "(an event per kernel)" overhead
row multi_stream one_stream depengine "faster than one stream" speedup
row replay_chain eager cuda_graph "cuda_graph >= 3x faster" speedup
cpu=$(awk -F, '$1 == "\"replay_chain/cuda_graph_cpu/manual_time_median\"" { printf "%.1f", $NF / 1000 }' "$out/gpu-bench.csv")
echo "replay_chain: CPU time per replay of 1,000 nodes ${cpu:-n/a} us (target <= 60 us: 10 us + 50 ns per node)"
[[ $test_rc == 0 ]]
