#!/usr/bin/env bash
# What the profiler's hooks cost when no profiler is started: builds
# bench/core_bench twice (Release; hooks compiled in, and compiled out with
# -DDEPENGINE_PROFILER_HOOKS=OFF), runs the two binaries alternately ROUNDS
# times, and prints the median ns_per_op of each run.
#   scripts/profiler-ab.sh [ROUNDS] [extra cmake options...]
# Build dirs: build-ab-on and build-ab-off (or $ON_DIR, $OFF_DIR; only the
# hooks option and the build type are set there). Compare the two columns
# within a round: on a shared machine timings drift between rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
jobs=${JOBS:-2}
filter=${FILTER:-'(chain|independent|random_rw)/depengine'}

on_dir=${ON_DIR:-build-ab-on}
off_dir=${OFF_DIR:-build-ab-off}

for hooks in ON OFF; do
  if [ "$hooks" = ON ]; then dir=$on_dir; else dir=$off_dir; fi
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DDEPENGINE_PROFILER_HOOKS=$hooks "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" --target core_bench
done

# One line per benchmark: name and median ns_per_op.
medians() {
  "$1" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_repetitions=7 \
      --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, '/_median"/ { gsub(/"/, "", $1); sub(/\/real_time_median/, "", $1); print $1, $NF }' | sort
}

for round in $(seq "$rounds"); do
  medians "$on_dir/bench/core_bench" >/tmp/profiler-ab-on.$$
  medians "$off_dir/bench/core_bench" >/tmp/profiler-ab-off.$$
  echo "round $round: median ns_per_op, hooks ON | hooks OFF"
  join /tmp/profiler-ab-on.$$ /tmp/profiler-ab-off.$$ | awk '{ printf "  %-28s %8.0f %8.0f\n", $1, $2, $3 }'
done
rm -f /tmp/profiler-ab-on.$$ /tmp/profiler-ab-off.$$
