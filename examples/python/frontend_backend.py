"""The frontend/backend split, timed: the chapter's first experiment.

Python (the frontend) only pushes each operation into the engine's queue;
the engine's threads (the backend) run it. A blocker after every step makes
the frontend wait for the backend each time; without it, the frontend races
ahead and waits once at the end.

    python examples/python/frontend_backend.py [--steps 10000] [--size 16]

Prints both times and checks that both runs computed the same value.
"""

import argparse
import sys
import time

import depengine as de


def run(steps: int, size: int, block_each_step: bool) -> tuple:
    x = de.zeros(size)
    one = de.ones(size)
    x.wait_to_read()
    start = time.perf_counter()
    for _ in range(steps):
        de.add(x, one, out=x)  # pushed; returns at once
        if block_each_step:
            x.wait_to_read()  # the blocker: wait for the backend
    pushed = time.perf_counter() - start
    total = x.sum().item()  # the one blocker of the asynchronous run
    return time.perf_counter() - start, pushed, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=16, help="elements per tensor")
    args = parser.parse_args()

    run(100, args.size, False)  # warm up the workers and the allocator
    sync_s, _, sync_total = run(args.steps, args.size, True)
    async_s, pushed_s, async_total = run(args.steps, args.size, False)
    print(f"{args.steps} ops of {args.size} elements on {de.default_engine()}")
    print(f"with a blocker every step:  {sync_s * 1e3:8.2f} ms")
    print(f"without (one at the end):   {async_s * 1e3:8.2f} ms  "
          f"(pushing took {pushed_s * 1e3:.2f} ms, {pushed_s / args.steps * 1e9:.0f} ns per op)")
    print(f"speedup: {sync_s / async_s:.2f}x")
    expected = float(args.steps * args.size)
    if sync_total != expected or async_total != expected:
        print(f"wrong results: {sync_total}, {async_total}, expected {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
