#!/usr/bin/env python3
"""Runs bench/core_bench several times and prints the tables of docs/performance.md.

On a shared machine one run proves little: this makes N runs, each running
every system on every workload (medians of R repetitions), then prints, per
workload and system, the median of the runs' medians with the spread of the
runs, and depengine's time as a fraction of each peer's, taken within each run
first (the peers ran in the same run, on the same graphs).

Each system runs in a process of its own, one after the other within a run:
in one process a system slows the next down (libgomp's threads keep spinning
after a parallel region; after depengine's benchmarks, oneTBB's flow graph was
measured 2-5x slower than in a fresh process).

    scripts/core-bench-table.py [--binary build/bench/core_bench] [--runs 3]
        [--repetitions 7] [--min-time 0.3] [--workloads REGEX]
        [--systems depengine,depengine_unbatched,naive,tbb_flow_graph,omp_task]
        [--busy N] [--processes K] [--spell-factor 2.5] [--spell-retries 6]
        [--spell-wait 10]

Contended modes, applied to every system alike: --busy N runs N threads that
spin without pause beside every benchmark (core_bench --busy_threads=N);
--processes K runs K copies of each system's process at once, as K programs
sharing the machine would, and reports the median of their medians.

The VMs this runs on have slow spells, seconds to minutes long, in which a
cache line takes 4-6x longer between cores (bench/support/cross_core_roundtrip.h)
and every system that hands work between cores slows down with it. core_bench
reports that round trip before and after its benchmarks and before each one;
a process where one exceeds --spell-factor times the fastest seen is run again after
--spell-wait seconds, up to --spell-retries times, and the table's head says
how many were. A run with a process kept in a spell after all its reruns is
left out of the tables, unless every run has one.

depengine_unbatched is depengine with EngineOptions::batch_pushes off: its
column in the ratio table is what batching buys, measured in the same run.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import core_bench_roundtrips

WORKLOADS = ["chain", "independent", "fan_out_in", "stencil_1d", "random_rw"]


def run_once(args):
    """One run: {(workload, system, threads): median ns per op}, and whether
    every process of it ran outside a slow spell."""
    medians = {}
    kept_before = SPELLS.kept
    for system in args.systems.split(","):
        medians.update(run_system(args, system))
    return medians, SPELLS.kept == kept_before


def run_system(args, system):
    command = [
        args.binary,
        f"--benchmark_filter=^({args.workloads})/{system}/",
        f"--benchmark_min_time={args.min_time}",
        f"--benchmark_repetitions={args.repetitions}",
        "--benchmark_report_aggregates_only=true",
        "--benchmark_format=json",
        f"--busy_threads={args.busy}",
    ]
    for attempt in range(args.spell_retries + 1):
        outputs, roundtrips = run_copies(args, command)
        SPELLS.fastest = min([SPELLS.fastest, *roundtrips])
        slow = [ns for ns in roundtrips if ns > args.spell_factor * SPELLS.fastest]
        if not slow:
            SPELLS.accepted.extend(roundtrips)
            break
        if attempt == args.spell_retries:
            SPELLS.kept += 1
            print(f"{system}: kept a run in a slow spell (round trip {max(slow):.0f} ns)", file=sys.stderr)
            break
        SPELLS.rerun += 1
        print(f"{system}: cross-core round trip {max(slow):.0f} ns, over {args.spell_factor}x the fastest"
              f" ({SPELLS.fastest:.0f} ns): a slow spell; again in {args.spell_wait} s", file=sys.stderr)
        time.sleep(args.spell_wait)
    samples = defaultdict(list)
    for output in outputs:
        for bench in json.loads(output).get("benchmarks", []):
            # With one repetition Google Benchmark reports no aggregates.
            wanted = "iteration" if args.repetitions == 1 else "aggregate"
            if bench["run_type"] != wanted or bench.get("aggregate_name", "median") != "median":
                continue
            workload, name, threads = bench["run_name"].split("/")[:3]
            samples[(workload, name, int(threads))].append(bench["ns_per_op"])
    return {key: statistics.median(values) for key, values in samples.items()}


class SPELLS:
    """The fastest cross-core round trip seen, and the runs that met a slow spell."""
    fastest = float("inf")
    accepted = []  # the round trips of the processes kept at first sight
    rerun = 0
    kept = 0


def run_copies(args, command):
    """Runs the copies at once; returns their JSON reports and the round trips
    each measured before and after its benchmarks (where it could)."""
    copies = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(args.processes)]
    outputs, roundtrips = [], []
    for copy in copies:
        output, errors = copy.communicate()
        if copy.returncode != 0:
            sys.stderr.write(errors)
            raise subprocess.CalledProcessError(copy.returncode, command)
        if not output.strip():
            # Google Benchmark prints nothing when its filter matches nothing.
            sys.exit(f"core-bench-table: {command[0]} ran no benchmark for {command[1]}"
                     " (--workloads and --systems name what core_bench runs)")
        outputs.append(output)
        # Each benchmark's own too: a spell may begin or end within a process.
        roundtrips += core_bench_roundtrips.roundtrips(json.loads(output), errors)
    return outputs, roundtrips


def fmt(ns):
    return f"{ns:,.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="build/bench/core_bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--min-time", default="0.3")
    parser.add_argument("--workloads", default="|".join(WORKLOADS), help="regex of workload names")
    parser.add_argument("--systems", default="depengine,depengine_unbatched,naive,tbb_flow_graph,omp_task",
                        help="comma-separated; starpu where it was built")
    parser.add_argument("--busy", type=int, default=0, help="busy threads beside every benchmark")
    parser.add_argument("--processes", type=int, default=1, help="copies of each system run at once")
    parser.add_argument("--spell-factor", type=float, default=2.5,
                        help="a process whose cross-core round trip exceeds this many times the fastest"
                             " seen ran in a slow spell")
    parser.add_argument("--spell-retries", type=int, default=6, help="reruns of a process that met a slow spell")
    parser.add_argument("--spell-wait", type=float, default=10, help="seconds before such a rerun")
    args = parser.parse_args()
    if args.runs < 1 or args.repetitions < 1:
        parser.error("--runs and --repetitions must be at least 1")
    if args.busy < 0 or args.processes < 1:
        parser.error("--busy must be at least 0 and --processes at least 1")
    if args.spell_factor <= 1 or args.spell_retries < 0 or args.spell_wait < 0:
        parser.error("--spell-factor must exceed 1, --spell-retries and --spell-wait be at least 0")

    results = []
    for i in range(args.runs):
        print(f"run {i + 1} of {args.runs}...", file=sys.stderr)
        results.append(run_once(args))
    # A run with a process kept in a spell counts only when every run has one.
    runs = [medians for medians, clean in results if clean] or [medians for medians, _ in results]

    # A process kept before a faster round trip was seen may have met a spell too.
    late = sum(ns > args.spell_factor * SPELLS.fastest for ns in SPELLS.accepted)
    print(f"Cross-core round trip: fastest {SPELLS.fastest:.0f} ns; processes rerun for a slow spell:"
          f" {SPELLS.rerun}, kept in one after {args.spell_retries} reruns: {SPELLS.kept},"
          f" round trips over the bound among those kept before a faster one was seen: {late};"
          f" runs in the tables: {len(runs)} of {len(results)}\n")
    columns = sorted({(s, t) for run in runs for (_, s, t) in run}, key=lambda c: (c[0] != "depengine", c))
    print("Median over runs of each run's median, ns per op (min-max over runs):\n")
    print("| workload | " + " | ".join(f"{s} {t}" for s, t in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for w in WORKLOADS:
        cells = []
        for s, t in columns:
            values = [run[(w, s, t)] for run in runs if (w, s, t) in run]
            if not values:
                cells.append("")
                continue
            spread = f" ({fmt(min(values))}–{fmt(max(values))})" if len(values) > 1 else ""
            cells.append(fmt(statistics.median(values)) + spread)
        if any(cells):
            print(f"| {w} | " + " | ".join(cells) + " |")

    peers = [c for c in columns if c[0] not in ("depengine", "naive")]
    print("\ndepengine's time as a fraction of the peer's with as many threads, within each run;"
          " median over runs (min-max):\n")
    print("| workload | " + " | ".join(f"÷ {s} {t}" for s, t in peers) + " |")
    print("|---" * (len(peers) + 1) + "|")
    for w in WORKLOADS:
        cells = []
        for s, t in peers:
            ratios = [run[(w, "depengine", t)] / run[(w, s, t)]
                      for run in runs if (w, "depengine", t) in run and (w, s, t) in run]
            if not ratios:
                cells.append("")
                continue
            spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
            cells.append(f"{statistics.median(ratios):.2f}{spread}")
        if any(cells):
            print(f"| {w} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
