import os
import shutil
import subprocess
import sys

import pytest

import depengine as de


def run_under_mpirun(script, processes=2):
    """Runs `script` with this Python under mpirun (as root, oversubscribed,
    on shared memory) and returns the finished process; skips the test where
    there is no mpirun or depengine was built without MPI."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("no mpirun on this machine")
    probe = de.Communicator.world(engine=de.Engine(cpu_threads=1))
    if "without MPI" in probe.describe():
        pytest.skip("depengine was built without MPI: " + probe.describe())
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl": "self,vader", "DEPENGINE_COMM_TIMEOUT": "60", "PYTHONUNBUFFERED": "1"}
    result = subprocess.run([mpirun, "--oversubscribe", "-np", str(processes), sys.executable, str(script)],
                            capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def engine():
    """A fresh two-worker engine per test, so that errors stay within it."""
    e = de.Engine(cpu_threads=2)
    yield e
    e.wait_all()


@pytest.fixture(params=["threaded", "naive"])
def any_engine(request):
    e = de.Engine(cpu_threads=2, kind=request.param)
    yield e
    e.wait_all()
