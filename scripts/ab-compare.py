#!/usr/bin/env python3
"""Compares core_bench binaries (a baseline and candidates) by paired runs.

On the shared development VM one benchmark's time drifts by a factor of 1.5
within minutes (the machine itself slows down: even the naive engine, one
thread, moves between 57 and 103 ns per op), so two binaries measured one
after the other tell little. Here every round runs each binary once, in a
process of its own, back to back (the order rotates from round to round), and
each candidate's time is divided by the baseline's of the same round: the
drift, slow next to a round, cancels in the ratio. Printed per benchmark: the
medians of ns_per_op, and the median of the per-round ratios with their
quartiles.

Quartiles that exclude 1 do not make a change real. A build that differs
from its baseline only by an unused function (the code's layout moved)
measured up to 9% apart from it, in a direction that changed from one A/B to
the next (docs/performance.md, "what an A/B resolves"). Pass such a layout
twin of the baseline as a further candidate, and count only differences that
clear the twin's, in more than one A/B:

    echo 'namespace depengine { [[gnu::used]] int layout_probe(int x) { return x + 1; } }' \\
        >> engine/engine_core.cpp    # in the baseline's tree; build it, then undo

    scripts/ab-compare.py [--filter REGEX] [--rounds 12] [--min-time 0.1]
        [--busy N] [--spell-factor 2.5] [--spell-wait 10]
        BASELINE CANDIDATE [CANDIDATE ...]

A round where a core_bench reported a cross-core round trip over
--spell-factor times the fastest seen ran in one of the VM's slow spells
(docs/performance.md) and is dropped, up to three times --rounds of them.

For example, with the baseline built in a worktree of the commit before:

    git worktree add /tmp/base HEAD~1
    cmake -S /tmp/base -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release
    cmake --build /tmp/base/build -j --target core_bench
    scripts/ab-compare.py --filter '^(chain|independent)/depengine/' \\
        /tmp/base/build/bench/core_bench build/bench/core_bench
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import core_bench_roundtrips


def run(binary, args):
    """{benchmark name: ns_per_op} of one run of `binary`, and the cross-core
    round trips it measured (before, before each benchmark, after)."""
    done = subprocess.run(
        [binary, f"--benchmark_filter={args.filter}", f"--benchmark_min_time={args.min_time}",
         "--benchmark_format=json", f"--busy_threads={args.busy}"],
        check=True, capture_output=True, text=True)
    report = json.loads(done.stdout)
    ns_per_op = {b["name"]: b["ns_per_op"] for b in report["benchmarks"] if "ns_per_op" in b}
    return ns_per_op, core_bench_roundtrips.roundtrips(report, done.stderr)


def quartiles(values):
    values = sorted(values)
    return values[len(values) // 4], statistics.median(values), values[(3 * len(values)) // 4]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline")
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--filter", default="^(chain|independent)/depengine/")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--min-time", default="0.1")
    parser.add_argument("--busy", type=int, default=0, help="busy threads beside every benchmark")
    parser.add_argument("--spell-factor", type=float, default=2.5,
                        help="drop a round where a round trip exceeds this many times the fastest seen (0: keep all)")
    parser.add_argument("--spell-wait", type=float, default=10, help="seconds before the round after a dropped one")
    args = parser.parse_args()

    binaries = [args.baseline] + args.candidates
    times = defaultdict(lambda: defaultdict(list))  # name -> binary index -> per-round ns
    fastest = float("inf")
    rounds = dropped = 0
    while rounds < args.rounds and dropped < 3 * args.rounds:
        order = list(range(len(binaries)))
        order = order[rounds % len(order):] + order[:rounds % len(order)]
        results, roundtrips = {}, []
        for i in order:
            results[i], measured = run(binaries[i], args)
            roundtrips += measured
        fastest = min([fastest, *roundtrips])
        if args.spell_factor > 0 and any(ns > args.spell_factor * fastest for ns in roundtrips):
            dropped += 1
            print(f"round dropped: a slow spell (round trip {max(roundtrips):.0f} ns)", file=sys.stderr)
            time.sleep(args.spell_wait)
            continue
        rounds += 1
        # A benchmark counts in a round only if every binary measured it.
        for name in set.intersection(*(set(res) for res in results.values())):
            for i in range(len(binaries)):
                times[name][i].append(results[i][name])
        print(f"round {rounds}/{args.rounds} done", file=sys.stderr)
    print(f"rounds: {rounds}, dropped for a slow spell: {dropped}")

    for i, binary in enumerate(binaries):
        print(f"bin{i}: {binary}{'  (baseline)' if i == 0 else ''}")
    for name in sorted(times):
        base = times[name][0]
        line = f"{name:40s} bin0 {statistics.median(base):7.1f} ns"
        for i in range(1, len(binaries)):
            ratios = [c / b for c, b in zip(times[name][i], base)]
            low, mid, high = quartiles(ratios)
            line += f" | bin{i} {statistics.median(times[name][i]):7.1f} ns, ratio {mid:.3f} [{low:.3f}, {high:.3f}]"
        print(line)


if __name__ == "__main__":
    main()
