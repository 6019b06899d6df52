"""The examples in examples/python, run as a user would run them."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(name, *args):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_frontend_backend():
    out = run_example("frontend_backend.py", "--steps", "2000")
    assert re.search(r"with a blocker every step: +[0-9.]+ ms", out)
    assert re.search(r"without \(one at the end\): +[0-9.]+ ms", out)


def test_auto_parallel():
    out = run_example("auto_parallel.py", "--n", "128", "--products", "4")
    assert "one after the other" in out and "both at once" in out


@pytest.mark.parametrize("device", ["cpu", "emulated"])
def test_mlp_digits_reaches_the_cpp_examples_accuracy(device):
    # examples/mlp_train.cpp: about 97% on the digits with these settings (at least 95%).
    out = run_example("mlp_digits.py", "--device", device, "--min-accuracy", "0.95")
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy >= 0.95


def test_mlp_digits_sync_mode_trains_too():
    out = run_example("mlp_digits.py", "--epochs", "3", "--sync")
    assert "epoch 3" in out
