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
    lines = result.stdout.split()
    assert any(re.fullmatch(r"[0-9.e+]+", word) for word in lines), result.stdout


def test_readme_example_is_short():
    assert len(first_python_block("README.md").strip().splitlines()) <= 10
