#!/usr/bin/env python3
"""Checks that includes only point down the floors of the house.

Each top-level folder has a floor (below); a file may include headers of its
own floor or lower ones, and public headers (include/depengine) include only
each other. Prints every upward include and exits 1 if there is one that is
not listed in KNOWN_UPWARD (edges still to be removed, each with the reason).

  scripts/check-layers.py            # from the repository root
"""
import pathlib
import re
import subprocess
import sys

FLOORS = {
    "include": 0,   # the public API
    "sync": 1,      # spin locks, wait signals, pause, prefetch, fences
    "engine": 2,    # ops, variables, dependency tracking, pools, both engines
    "devices": 3,   # executors behind the Executor interface
    "ops": 4,       # tensor operations on the devices
    "profiler": 4,  # recording and views, an observer of the engine
    "capi": 5,
    "comm": 5,
    "python": 6,
    "examples": 7,
    "bench": 8,     # may use the examples' models
    "tests": 9,     # may use anything
}

# Upward edges that remain, as (including folder, included folder), each
# to be removed.
KNOWN_UPWARD = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def floor_of_include(path):
    first = path.split("/")[0]
    if first == "depengine":
        return "include"
    return first if first in FLOORS else None


def main():
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    upward, unknown = [], []
    for name in files:
        if not re.search(r"\.(h|hpp|cpp|cc|cu|c)$", name):
            continue
        top = name.split("/")[0]
        if top not in FLOORS:
            continue
        for line in pathlib.Path(name).read_text(errors="replace").splitlines():
            match = INCLUDE.match(line)
            if not match:
                continue
            target = floor_of_include(match.group(1))
            if target is None or target == top or FLOORS[target] < FLOORS[top]:
                continue
            edge = (top, target)
            (upward if edge in KNOWN_UPWARD else unknown).append(f"{name}: {match.group(1)}")
    for line in upward:
        print(f"known upward include (to remove): {line}")
    for line in unknown:
        print(f"UPWARD INCLUDE: {line}")
    print(f"check-layers: {len(unknown)} new upward includes, {len(upward)} known ones")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
