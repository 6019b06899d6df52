#!/usr/bin/env python3
"""Compares how long each kind of operation took in several Chrome traces.

For each operation name, the count, the median duration and the total, one
column group per trace, so that the same program's ops can be compared run by
run: on the naive engine against the threaded one, with 1 or 2 workers, with
another run-ahead bound. The traces come from the profiler (docs/profiler.md),
e.g. DEPENGINE_PROFILE=FILE.json on any program, or depbench --trace.

    scripts/trace-op-times.py naive.json threaded.json [--min-count 100]

Then, per trace, the worker's view (per thread that ran ops): the ops' time
against the span from its first op to its last, and how much of the time
between two ops was spent with the next one already released (released by a
completion, or pushed, before the previous op ended) -- the engine's own cost
between ops -- rather than waiting for it to become ready.
"""

import argparse
import collections
import json
import statistics


def load(path):
    with open(path) as f:
        trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def ops_of(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "op"]


def ready_times(events, ops):
    """Each op's ready time: its push, or the completion that released it last."""
    pushed = {e["args"]["id"]: e["ts"] for e in events if e.get("ph") == "i" and e.get("cat") == "push"}
    starts = {(e["tid"], round(e["ts"], 3)): e for e in ops}
    flow_start = {e["id"]: e for e in events if e.get("ph") == "s"}
    ready = {op_id: ts for op_id, ts in pushed.items()}
    for e in events:
        if e.get("ph") != "f" or e["id"] not in flow_start:
            continue
        op = starts.get((e["tid"], round(e["ts"], 3)))
        if op is not None:
            op_id = op["args"]["id"]
            ready[op_id] = max(ready.get(op_id, 0.0), flow_start[e["id"]]["ts"])
    return ready


def thread_view(events, ops):
    ready = ready_times(events, ops)
    rows = []
    by_thread = collections.defaultdict(list)
    for e in ops:
        if e["name"] not in ("wait_to_read", "wait_to_write", "wait_all"):
            by_thread[e["tid"]].append(e)
    for tid, thread_ops in sorted(by_thread.items()):
        thread_ops.sort(key=lambda e: e["ts"])
        busy = sum(e["dur"] for e in thread_ops)
        span = thread_ops[-1]["ts"] + thread_ops[-1]["dur"] - thread_ops[0]["ts"]
        between_ready = 0.0
        for before, after in zip(thread_ops, thread_ops[1:]):
            end = before["ts"] + before["dur"]
            if ready.get(after["args"]["id"], 0.0) <= end:
                between_ready += after["ts"] - end
        rows.append((tid, len(thread_ops), busy, span, between_ready))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--min-count", type=int, default=1, help="leave out op names seen fewer times")
    args = parser.parse_args()
    events = [load(path) for path in args.traces]
    durations = []
    for trace in events:
        d = collections.defaultdict(list)
        for e in ops_of(trace):
            d[e["name"]].append(e["dur"])
        durations.append(d)
    names = sorted({n for d in durations for n, v in d.items() if len(v) >= args.min_count},
                   key=lambda n: -sum(durations[0].get(n, [0])))
    print("op".ljust(24) + "".join(f"{path[-28:]:>34}" for path in args.traces))
    print(" " * 24 + "".join(f"{'count':>10}{'median us':>12}{'total ms':>12}" for _ in args.traces))
    for name in names:
        cells = []
        for d in durations:
            v = d.get(name, [])
            cells.append(f"{len(v):>10}{statistics.median(v) if v else 0:>12.2f}{sum(v) / 1000:>12.2f}")
        print(name[:23].ljust(24) + "".join(cells))
    for path, trace in zip(args.traces, events):
        print(f"\n{path}: per thread that ran ops")
        print(f"{'thread':>8}{'ops':>8}{'ops ms':>10}{'span ms':>10}{'between, next ready ms':>25}")
        for tid, count, busy, span, between_ready in thread_view(trace, ops_of(trace)):
            print(f"{tid:>8}{count:>8}{busy / 1000:>10.2f}{span / 1000:>10.2f}{between_ready / 1000:>25.2f}")


if __name__ == "__main__":
    main()
