"""The KVStore from Python: push, pull and the optimizer, in one process and under mpirun."""

import textwrap

import numpy as np
import pytest

import depengine as de
from conftest import run_under_mpirun


@pytest.fixture
def engine():
    with de.Engine(cpu_threads=2) as e:
        e.add_emulated_device(0)
        e.add_emulated_device(1)
        yield e


@pytest.mark.parametrize("kind", ["local", "device", "dist_sync"])
def test_push_sums_the_devices_and_pull_copies_back(engine, kind):
    kv = de.KVStore.create(kind, engine=engine)
    assert kv.type == kind and kv.is_worker and kv.num_workers == 1 and "KVStore(" in repr(kv)
    kv.init(3, de.zeros((5,), engine=engine))
    a = de.array(np.arange(5, dtype=np.float32), device="emulated:0", engine=engine)
    b = de.array(np.arange(5, dtype=np.float32) * 10, device="emulated:1", engine=engine)
    outs = [de.zeros((5,), device="emulated:0", engine=engine), de.zeros((5,), device="emulated:1", engine=engine)]
    kv.pushpull(3, [a, b], outs, priority=1)
    for out in outs:
        np.testing.assert_array_equal(out.asnumpy(), np.arange(5) * 11)  # the blocker waits for the pull
    kv.push(3, a)
    w = de.zeros((5,), engine=engine)
    kv.pull(3, w)
    np.testing.assert_array_equal(w.asnumpy(), np.arange(5))


def test_sgd_with_momentum(engine):
    kv = de.KVStore.create("local", engine=engine)
    kv.set_optimizer(learning_rate=0.5, momentum=0.5, rescale_grad=0.5)
    kv.init(0, de.full((3,), 1.0, dtype="float64", engine=engine))
    w = de.zeros((3,), dtype="float64", engine=engine)
    g = de.full((3,), 2.0, dtype="float64", engine=engine)
    kv.pushpull(0, g, w)  # v = 1, w = 1 - 0.5
    kv.pushpull(0, g, w)  # v = 0.5 + 1, w = 0.5 - 0.75
    np.testing.assert_allclose(w.asnumpy(), [-0.25] * 3)


def test_bad_input_is_rejected(engine):
    kv = de.KVStore.create("local", engine=engine)
    kv.init(1, de.zeros((4,), engine=engine))
    with pytest.raises(ValueError, match="never initialised"):
        kv.push(2, de.zeros((4,), engine=engine))
    with pytest.raises(ValueError, match="does not match key 1"):
        kv.pull(1, de.zeros((5,), engine=engine))
    with pytest.raises(ValueError, match="unknown type"):
        de.KVStore.create("nothing", engine=engine)
    with pytest.raises(TypeError, match="must be a Tensor or a list"):
        kv.push(1, 42)


def test_dist_sync_under_mpirun(tmp_path):
    script = tmp_path / "kv.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import depengine as de
        kv = de.KVStore.create("dist_sync")
        kv.init(0, de.zeros((4,)))
        w = de.zeros((4,))
        kv.pushpull(0, de.full((4,), kv.rank + 1.0), w)
        print(f"worker {kv.rank} of {kv.num_workers}: {w.asnumpy().tolist()}")
    """))
    result = run_under_mpirun(script)
    for rank in (0, 1):
        assert f"worker {rank} of 2: [3.0, 3.0, 3.0, 3.0]" in result.stdout, result.stdout
