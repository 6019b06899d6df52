import pytest

import depengine as de


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
