#!/usr/bin/env python3
"""Medians of several comm_bench --json runs, as the markdown table of
docs/distributed.md.

    for i in 1 2 3 4 5; do mpirun -np 2 build/bench/comm_bench --json comm$i.json; done
    scripts/comm-bench-table.py comm*.json
"""
import json
import statistics
import sys


def size_text(b):
    if b >= 1 << 20:
        return f"{b >> 20} MiB"
    if b >= 1 << 10:
        return f"{b >> 10} KiB"
    return f"{b} B"


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    med = statistics.median
    print(f"Medians of {len(runs)} runs.\n")
    print("| size | raw MPI_Allreduce µs | depengine µs | raw busbw GB/s | depengine busbw GB/s | depengine / raw |")
    print("|---:|---:|---:|---:|---:|---:|")
    sizes = [r["bytes"] for r in runs[0] if r["benchmark"] == "allreduce"]
    for b in sizes:
        rs = [next(r for r in run if r["benchmark"] == "allreduce" and r["bytes"] == b) for run in runs]
        print(f"| {size_text(b)} | {med(r['raw_mpi_seconds'] for r in rs) * 1e6:.2f} "
              f"| {med(r['depengine_seconds'] for r in rs) * 1e6:.2f} "
              f"| {med(r['raw_busbw_gbs'] for r in rs):.2f} | {med(r['depengine_busbw_gbs'] for r in rs):.2f} "
              f"| {med(r['depengine_busbw_gbs'] / r['raw_busbw_gbs'] for r in rs):.2f} |")
    many = [next(r for r in run if r["benchmark"] == "many_small") for run in runs]
    fused = med(m["fused_seconds"] for m in many) * 1e3
    each = med(m["one_by_one_seconds"] for m in many) * 1e3
    one = med(m["one_buffer_seconds"] for m in many) * 1e3
    ratio = med(m["one_by_one_seconds"] / m["fused_seconds"] for m in many)
    per = med(m["tensors_per_collective"] for m in many)
    print(f"\n1,000 allreduces of 4 KiB: fused {fused:.2f} ms ({per:.0f} tensors per MPI collective), "
          f"one MPI collective each {each:.2f} ms, fused {ratio:.1f}x faster; "
          f"one allreduce of the 4,000 KiB together {one:.2f} ms.")


if __name__ == "__main__":
    main(sys.argv[1:])
