#!/usr/bin/env python3
"""Instructions per operation on the engine's CPU path, counted by callgrind.

Wall times on a shared VM move by 2x from run to run; instruction counts do
not. This runs one core_bench workload under callgrind twice, briefly and at
length, counting only inside Engine::push (the frontend's side of an op),
ThreadedEngine::on_cpu_spinning (a worker registering sealed batches of
pushes), EngineCore::invoke (running an op) and
ThreadedEngine::complete_and_continue (completing it and picking the next),
and prints the difference divided by the difference in operations (the
calls of invoke): the steady state per op, without the first iteration's
allocations.

    scripts/instructions-per-op.py [--binary build/bench/core_bench]
        [--benchmark chain/depengine/1]

Needs valgrind. Under valgrind the threads run one at a time, so which
thread runs an op differs from a real run; the counts per op do not.
"""

import argparse
import re
import subprocess
import sys
import tempfile

FUNCTIONS = {
    "push": "depengine::Engine::push(",
    "register": "depengine::ThreadedEngine::on_cpu_spinning(",
    "invoke": "depengine::EngineCore::invoke(",
    "complete": "depengine::ThreadedEngine::complete_and_continue(",
}


def profile(binary, benchmark, min_time, out):
    subprocess.run(
        [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            "--collect-atstart=no",
            *[f"--toggle-collect={name}*" for name in FUNCTIONS.values()],
            binary, f"--benchmark_filter=^{benchmark}/", f"--benchmark_min_time={min_time}",
        ],
        check=True, capture_output=True, text=True)
    tree = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", "--threshold=100", out],
                          check=True, capture_output=True, text=True).stdout
    return parse(tree)


def parse(tree):
    """{label: (inclusive instructions, calls)} from callgrind_annotate's caller tree."""
    number = lambda s: int(s.replace(",", ""))
    lines = tree.splitlines()
    found = {}
    for i, line in enumerate(lines):
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\*\s+\S*?:(.*)", line)
        if not m:
            continue
        for label, name in FUNCTIONS.items():
            if m.group(2).startswith(name) and label not in found:
                calls = 0
                j = i - 1
                while j >= 0 and "<" in lines[j][:30]:
                    c = re.search(r"\(([\d,]+)x\)", lines[j])
                    calls += number(c.group(1)) if c else 0
                    j -= 1
                found[label] = (number(m.group(1)), calls)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="build/bench/core_bench")
    parser.add_argument("--benchmark", default="chain/depengine/1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        short = profile(args.binary, args.benchmark, 0.01, f"{tmp}/short.out")
        long = profile(args.binary, args.benchmark, 1.0, f"{tmp}/long.out")
    print(f"{args.benchmark}: instructions per op, steady state (callgrind)")
    if "invoke" not in short or "invoke" not in long or long["invoke"][1] == short["invoke"][1]:
        print("  no operation ran")
        return 1
    ops = long["invoke"][1] - short["invoke"][1]
    for label in FUNCTIONS:
        if label not in short or label not in long:
            print(f"  {label:10} n/a (not called)")
            continue
        instructions = (long[label][0] - short[label][0]) / ops
        print(f"  {label:10} {instructions:7.0f}   ({long[label][1]:,} calls in the long run)")


if __name__ == "__main__":
    sys.exit(main())
