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


@pytest.mark.parametrize("kind", ["local", "device", "dist_sync"])
def test_str_keys(engine, kind):
    kv = de.KVStore.create(kind, engine=engine)
    kv.init("layer0.weight", de.zeros((3,), engine=engine))
    w = de.zeros((3,), engine=engine)
    kv.pushpull("layer0.weight", de.full((3,), 2.0, engine=engine), w)
    np.testing.assert_array_equal(w.asnumpy(), [2.0] * 3)
    # A str key stands for the int KVStore.key_of gives (the same in every process and build).
    assert de.KVStore.key_of("w") == 694283802
    kv.pull(de.KVStore.key_of("layer0.weight"), w)
    np.testing.assert_array_equal(w.asnumpy(), [2.0] * 3)
    with pytest.raises(ValueError, match="key 'never' was never initialised"):
        kv.pull("never", w)
    with pytest.raises(ValueError, match="which key 'layer0.weight' already holds"):
        kv.init(de.KVStore.key_of("layer0.weight"), de.zeros((3,), engine=engine))
    with pytest.raises(TypeError, match="a key is an int or a str"):
        kv.push(1.5, w)


@pytest.mark.parametrize("kind", ["local", "device", "dist_sync"])
def test_python_updater_runs_where_the_value_is_stored(engine, kind):
    kv = de.KVStore.create(kind, engine=engine)
    seen = []

    def updater(key, merged, stored):
        seen.append((key, merged.shape, stored.shape))
        de.axpy(-0.5, merged, stored)  # stored -= 0.5 * merged

    kv.set_updater(updater)
    kv.init("w", de.full((4,), 10.0, engine=engine))
    w = de.zeros((4,), engine=engine)
    a = de.full((4,), 1.0, device="emulated:0", engine=engine)
    b = de.full((4,), 3.0, device="emulated:1", engine=engine)
    kv.pushpull("w", [a, b], w)
    np.testing.assert_array_equal(w.asnumpy(), [8.0] * 4)
    kv.pushpull("w", [a, b], w)
    np.testing.assert_array_equal(w.asnumpy(), [6.0] * 4)
    assert seen == [(de.KVStore.key_of("w"), (4,), (4,))] * 2


def test_python_updater_errors(engine):
    kv = de.KVStore.create("local", engine=engine)
    with pytest.raises(TypeError, match="must be callable"):
        kv.set_updater(42)

    def failing(key, merged, stored):
        raise KeyError(f"no update for {key}")

    kv.set_updater(failing)
    kv.init(5, de.zeros((2,), engine=engine))
    with pytest.raises(KeyError, match="no update for 5"):
        kv.push(5, de.zeros((2,), engine=engine))


def test_python_updater_under_mpirun(tmp_path):
    # Shards in the workers (the updater runs there, on the shard's thread)
    # and one dedicated server (which gets its updater from create only).
    script = tmp_path / "kv_updater.py"
    script.write_text(textwrap.dedent("""
        import sys
        import depengine as de

        kept = []

        def updater(key, merged, stored):
            if key == de.KVStore.key_of("kept"):
                kept.append(merged)  # not allowed on a dist shard: fails the key
            de.axpy(-1.0, merged, stored)

        for servers in (0, 1):
            kv = de.KVStore.create("dist_sync", servers=servers, updater=updater if servers else None)
            if not kv.is_worker:
                del kv
                continue
            if servers == 0:
                kv.set_updater(updater)
            else:
                try:
                    kv.set_updater(updater)
                    sys.exit("set_updater on a worker of dedicated servers did not raise")
                except RuntimeError as e:
                    assert "dedicated server" in str(e), e
            kv.init("w", de.full((1000,), 100.0))
            w = de.zeros((1000,))
            for _ in range(2):
                kv.pushpull("w", de.full((1000,), kv.rank + 1.0), w)
            got = set(w.asnumpy().tolist())
            print(f"servers {servers} worker {kv.rank} of {kv.num_workers}: {sorted(got)}")
            kv.init("kept", de.zeros((3,)))
            kv.pushpull("kept", de.zeros((3,)), w2 := de.zeros((3,)))
            try:
                w2.asnumpy()
                sys.exit("an updater that kept a tensor did not fail the key")
            except RuntimeError as e:
                assert "valid during the call only" in str(e), e
            del kv
    """))
    result = run_under_mpirun(script, processes=3)
    # servers=0: three workers push 1 + 2 + 3 per round; servers=1: two workers push 1 + 2.
    for rank in (0, 1, 2):
        assert f"servers 0 worker {rank} of 3: [88.0]" in result.stdout, result.stdout + result.stderr
    for rank in (0, 1):
        assert f"servers 1 worker {rank} of 2: [94.0]" in result.stdout, result.stdout + result.stderr
