#!/usr/bin/env bash
# The CPU tables of docs/performance.md on the machine at hand, for a
# many-core one (the GPU machine's 16 cores) in one prepared run:
# core_bench's five workloads against oneTBB's flow graph with 1, 2 and
# every core's threads — quiet, beside one busy thread, beside a busy thread
# per core, and as two processes at once — then metg (stencil_1d, one column
# per core) and depbench's CPU scenarios with 1 and 2 workers.
# Stays within a budget (each step gets a share of what is left).
#
#   scripts/cores-check.sh [--budget SECONDS] [BUILD_DIR]          (default: build, 300 s)
#   scripts/cores-check.sh [--budget SECONDS] --prebuilt BUNDLE_DIR (scripts/gpu-bundle.sh)
#
# Every step's output goes to $OUT (where set, as on the device machine) or
# to the build or bundle folder, as cores-*.txt; the tables are printed.
# Exit status: 0 when every step finished, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
budget=300
if [[ ${1:-} == --budget ]]; then
  budget=${2:?--budget needs seconds}
  shift 2
fi
deadline=$((SECONDS + budget))

if [[ ${1:-} == --prebuilt ]]; then
  source "$root/scripts/bundle-env.sh"
  bundle=$(cd "${2:?--prebuilt needs the folder scripts/gpu-bundle.sh made}" && pwd)
  echo "== prebuilt programs"
  use_bundle "$bundle"
  out=${OUT:-$bundle}
else
  build=$(cd "${1:-$root/build}" && pwd)
  bin=$build/bench
  out=${OUT:-$build}
fi
for program in core_bench metg depbench; do
  [[ -x $bin/$program ]] || { echo "cores-check: no $bin/$program (build it first)" >&2; exit 1; }
done
cores=$(nproc)
echo "== $(lscpu | awk -F': +' '/^Model name/ { print $2 }'), $cores usable cores"

# Runs a step with a share of the time left: "label share-of-the-rest command...".
rc=0
step() {
  local label=$1 share=$2 left=$((deadline - SECONDS))
  shift 2
  local limit=$((left * share / 100))
  ((limit < 5)) && limit=5
  echo "== $label (up to ${limit} s)"
  timeout "$limit" "$@" >"$out/cores-$label.txt" 2>&1
  local status=$?
  if ((status != 0)); then
    rc=1
    echo "   exit $status$( ((status == 124)) && echo ': ran out of time'); the end of its output:"
    tail -n 5 "$out/cores-$label.txt"
  fi
}
table() {  # label share [core-bench-table options...]
  local label=$1 share=$2
  shift 2
  step "$label" "$share" python3 "$root/scripts/core-bench-table.py" --binary "$bin/core_bench" --runs 1 \
    --repetitions 3 --min-time 0.1 --systems depengine,tbb_flow_graph --spell-retries 1 --spell-wait 2 "$@"
}
table quiet 20
table busy-1 25 --busy 1
table "busy-$cores" 33 --busy "$cores"
table processes-2 50 --processes 2
step metg 40 "$bin/metg" --runs 3 --systems depengine,tbb_flow_graph,omp_taskwait
step depbench-1 50 "$bin/depbench" --repeat 5 --workers 1
step depbench-2 100 "$bin/depbench" --repeat 5 --workers 2

# The tables: core-bench-table's ratio table (depengine ÷ the flow graph),
# metg's result, depbench's summary.
for label in quiet busy-1 "busy-$cores" processes-2; do
  echo
  echo "core_bench, $label: depengine ÷ tbb_flow_graph"
  sed -n '/fraction of the peer/,$p' "$out/cores-$label.txt" | tail -n +3
done
echo
grep -E '^METG|round trip' "$out/cores-metg.txt"
for workers in 1 2; do
  echo
  echo "depbench, $workers worker(s):"
  grep -E '^(scenario|roofline|frontend_backend|auto_parallel|overlap_copy_compute|data_loading|training_step|hybridize|data_parallel|gradient_sync) |^Cross-core|^Memory' \
    "$out/cores-depbench-$workers.txt"
done
exit $rc
