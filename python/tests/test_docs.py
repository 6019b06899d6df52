"""The Python examples of README.md and docs/python.md run as printed."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def first_python_block(path):
    match = re.search(r"```python\n(.*?)```", (ROOT / path).read_text(), re.S)
    assert match, f"no python block in {path}"
    return match.group(1)


@pytest.mark.parametrize("path", ["README.md", "docs/python.md"])
def test_first_example_runs(path):
    code = first_python_block(path)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # A number printed by the example. Searched for, not split out: a print
    # from a Python op may run at the same time, and print() writes its text
    # and its newline in two calls, so the two lines may come out joined.
    assert re.search(r"[0-9]+\.[0-9]+(e[+-]?[0-9]+)?", result.stdout), result.stdout


def test_readme_example_is_short():
    assert len(first_python_block("README.md").strip().splitlines()) <= 10
