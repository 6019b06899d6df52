#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU: builds depengine with CUDA,
# runs the GPU tests and the GPU benchmarks, and prints a short table last.
# Stays within 5 minutes (each step gets what is left of a 290 s budget).
#
#   scripts/gpu-check.sh [BUILD_DIR]      (default: build-gpu)
#
# Exit status: 0 when the tests passed, 1 when they failed, 2 without a GPU.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
deadline=$((SECONDS + 290))
left() { local s=$((deadline - SECONDS)); echo $((s > 1 ? s : 1)); }

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi failed)" >&2
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -n 1)
# Compile for this GPU only ("9.0" -> 90): the shortest build.
arch=$(echo "$gpu" | awk -F', ' '{ gsub(/\./, "", $3); print $3 }')
[[ $arch =~ ^[0-9]+$ ]] || arch="80;90"
[[ -x /usr/local/cuda/bin/nvcc ]] && export PATH="/usr/local/cuda/bin:$PATH"

echo "== configure ($gpu)"
timeout "$(left)" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEPENGINE_WITH_CUDA=ON \
  -DDEPENGINE_BUILD_EXAMPLES=OFF "-DCMAKE_CUDA_ARCHITECTURES=$arch" >"$build.configure.log" 2>&1 ||
  { tail -n 30 "$build.configure.log"; exit 1; }
echo "== build"
timeout "$(left)" cmake --build "$build" -j "$(nproc)" --target device_cuda_tests device_cuda_bench \
  >"$build.build.log" 2>&1 || { tail -n 30 "$build.build.log"; exit 1; }

echo "== GPU tests"
timeout "$(left)" "$build/tests/device_cuda_tests" 2>&1 | tee "$build/gpu-tests.log" | grep -E '^\[ +(OK|FAILED|SKIPPED) +\]'
test_rc=${PIPESTATUS[0]}
tests=$(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$build/gpu-tests.log" | tr '\n' ' ')

echo "== GPU benchmarks"
timeout "$(left)" "$build/bench/device_cuda_bench" --benchmark_min_time=0.5 --benchmark_format=csv \
  >"$build/gpu-bench.csv" 2>"$build/gpu-bench.err"
bench_rc=$?

# ns_per_op of each "<workload>/<system>" from the CSV (name first, counter last).
ns() { awk -F, -v n="\"$1/real_time\"" '$1 == n { printf "%.0f", $NF }' "$build/gpu-bench.csv"; }
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
echo "tests: ${tests:-none ran} (exit $test_rc); benchmarks exit $bench_rc"
printf "%-22s %-11s %12s  %-10s %12s  %-18s %s\n" workload baseline "ns/op" system "ns/op" result target
row overlap_copy_compute sync async "async >= 1.8x faster" speedup
row launch_overhead direct depengine "<= 1.3x of direct" overhead
row multi_stream one_stream depengine "faster than one stream" speedup
[[ $test_rc == 0 ]]
