"""What one operation costs from Python, against NumPy's own call overhead.

    python python/bench/push_overhead.py [--ops 100000] [--repeats 5] [--json FILE]

Measured in one run, medians of --repeats:
  - push of a native op: `de.add(x, one, out=x)` on a 16-element tensor, the
    time of the Python loop that pushes --ops of them (the engine runs them
    meanwhile; the wait at the end is not counted), and the same including
    that wait;
  - the allocating form `x + one` (a new tensor per op, dropped at once);
  - a pushed Python function (`engine.push(fn, writes=v)`), pushed and run;
  - NumPy's own overhead for the same tiny op: `np.add(x, one, out=x)` and
    `x + one` on 16-element arrays;
  - the chapter's sync-against-async ratio: a chain of --ops / 10 adds with
    a blocker (`wait_to_read`) after every op, against one blocker at the end,
    and the naive engine (each op run on the pushing thread) for reference.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import depengine as de

SIZE = 16


def best_of(repeats, fn):
    return statistics.median(fn() for _ in range(repeats))


def push_native(engine, ops, include_wait):
    x = de.zeros(SIZE, engine=engine)
    one = de.ones(SIZE, engine=engine)
    engine.wait_all()
    add = de.add
    start = time.perf_counter()
    for _ in range(ops):
        add(x, one, out=x)
    pushed = time.perf_counter() - start
    x.wait_to_read()
    total = time.perf_counter() - start
    assert x.asnumpy()[0] == ops
    return (total if include_wait else pushed) / ops


def push_allocating(engine, ops):
    x = de.zeros(SIZE, engine=engine)
    one = de.ones(SIZE, engine=engine)
    engine.wait_all()
    start = time.perf_counter()
    for _ in range(ops):
        y = x + one  # noqa: F841 (dropped at the next iteration)
    seconds = time.perf_counter() - start
    engine.wait_all()
    return seconds / ops


def push_python_function(engine, ops):
    v = engine.new_var("counter")
    count = [0]

    def bump():
        count[0] += 1

    engine.wait_all()
    start = time.perf_counter()
    for _ in range(ops):
        engine.push(bump, writes=v)
    engine.wait_to_read(v)
    seconds = time.perf_counter() - start
    assert count[0] == ops
    return seconds / ops


def numpy_in_place(ops):
    x = np.zeros(SIZE, np.float32)
    one = np.ones(SIZE, np.float32)
    add = np.add
    start = time.perf_counter()
    for _ in range(ops):
        add(x, one, out=x)
    return (time.perf_counter() - start) / ops


def numpy_allocating(ops):
    x = np.zeros(SIZE, np.float32)
    one = np.ones(SIZE, np.float32)
    start = time.perf_counter()
    for _ in range(ops):
        y = x + one  # noqa: F841
    return (time.perf_counter() - start) / ops


def chain(engine, ops, block_each_op):
    x = de.zeros(SIZE, engine=engine)
    one = de.ones(SIZE, engine=engine)
    engine.wait_all()
    start = time.perf_counter()
    for _ in range(ops):
        de.add(x, one, out=x)
        if block_each_op:
            x.wait_to_read()
    x.wait_to_read()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    ops, r = args.ops, args.repeats

    engine = de.Engine()
    naive = de.Engine(kind="naive")
    push_native(engine, 1000, False)  # warm up
    rows = {
        "push native op (de.add out=), push loop only": best_of(r, lambda: push_native(engine, ops, False)),
        "push native op (de.add out=), until done": best_of(r, lambda: push_native(engine, ops, True)),
        "allocating native op (x + one)": best_of(r, lambda: push_allocating(engine, ops)),
        "pushed Python function, until done": best_of(r, lambda: push_python_function(engine, ops // 10)),
        "NumPy np.add(x, one, out=x)": best_of(r, lambda: numpy_in_place(ops)),
        "NumPy x + one": best_of(r, lambda: numpy_allocating(ops)),
    }
    chain_ops = max(ops // 10, 1)
    sync_s = best_of(r, lambda: chain(engine, chain_ops, True))
    async_s = best_of(r, lambda: chain(engine, chain_ops, False))
    naive_s = best_of(r, lambda: chain(naive, chain_ops, False))

    print(f"depengine {de.__version__} from Python {sys.version.split()[0]}, {engine}, "
          f"{SIZE}-element float32 tensors, medians of {r}")
    print(f"{'':50} {'ns/op':>9}")
    for name, seconds in rows.items():
        print(f"{name:50} {seconds * 1e9:9.0f}")
    ratio = rows["push native op (de.add out=), push loop only"] / rows["NumPy np.add(x, one, out=x)"]
    print(f"push of a native op / NumPy's call: {ratio:.2f}x")
    print(f"chain of {chain_ops} adds: blocker after every op {sync_s * 1e3:.2f} ms, "
          f"one blocker at the end {async_s * 1e3:.2f} ms, naive engine {naive_s * 1e3:.2f} ms")
    print(f"sync / async: {sync_s / async_s:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ns_per_op": {k: v * 1e9 for k, v in rows.items()},
                       "chain_ops": chain_ops, "sync_s": sync_s, "async_s": async_s, "naive_s": naive_s,
                       "sync_over_async": sync_s / async_s}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
