"""The Communicator from Python: collectives pushed as ops, in one process and under mpirun."""

import pathlib

import numpy as np
import pytest

import depengine as de
from conftest import run_under_mpirun

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "allreduce.py"


@pytest.fixture
def engine():
    with de.Engine(cpu_threads=2) as e:
        e.add_emulated_device(0)
        e.add_emulated_device(1)
        yield e


def test_a_world_of_one_process(engine):
    comm = de.Communicator.world(engine=engine)
    assert comm.process_count >= 1 and 0 <= comm.process_rank < comm.process_count
    assert "process" in comm.describe() and "Communicator(" in repr(comm)


def test_allreduce_over_local_devices_is_in_place_and_asynchronous(engine):
    comm = de.Communicator.world(engine=engine)
    if comm.process_count != 1:
        pytest.skip("run alone: the expected sums are one process's")
    a = de.array(np.arange(7, dtype=np.float32), engine=engine)
    b = de.array(np.arange(7, dtype=np.float32) * 10, device="emulated:0", engine=engine)
    c = de.array(np.ones(7, dtype=np.float32), device="emulated:1", engine=engine)
    comm.allreduce([a, b, c], name="sum")
    expected = np.arange(7) * 11 + 1
    for t in (a, b, c):
        np.testing.assert_array_equal(t.asnumpy(), expected)  # the blocker waits for the allreduce
    comm.allreduce([a, b, c], op="mean")
    np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-6)


def test_broadcast_allgather_reduce_scatter(engine):
    comm = de.Communicator.world(engine=engine)
    if comm.process_count != 1:
        pytest.skip("run alone")
    a = de.array(np.array([1, 2, 3], dtype=np.float64), engine=engine)
    b = de.zeros((3,), dtype="float64", device="emulated:0", engine=engine)
    comm.broadcast([a, b], root=0)
    np.testing.assert_array_equal(b.asnumpy(), [1, 2, 3])
    out_a = de.zeros((6,), dtype="float64", engine=engine)
    out_b = de.zeros((6,), dtype="float64", device="emulated:0", engine=engine)
    comm.allgather([a, b], [out_a, out_b])
    np.testing.assert_array_equal(out_a.asnumpy(), [1, 2, 3, 1, 2, 3])
    ins = [de.array(np.array([1.0, 2.0]), engine=engine), de.array(np.array([10.0, 20.0]), device="emulated:0", engine=engine)]
    outs = [de.zeros((1,), dtype="float64", engine=engine), de.zeros((1,), dtype="float64", device="emulated:0", engine=engine)]
    comm.reduce_scatter(ins, outs)
    assert outs[0].item() == 11.0 and outs[1].item() == 22.0
    comm.barrier()


def test_bad_input_is_rejected(engine):
    comm = de.Communicator.world(engine=engine)
    a = de.zeros((4,), engine=engine)
    with pytest.raises(ValueError, match="op must be 'sum' or 'mean'"):
        comm.allreduce([a], op="max")
    with pytest.raises(TypeError, match="must be a Tensor or a list"):
        comm.allreduce(42)
    with pytest.raises(TypeError, match="must be Tensors"):
        comm.allreduce([a, "b"])
    with de.Engine(cpu_threads=1) as other:
        with pytest.raises(ValueError, match="another engine"):
            comm.allreduce([de.zeros((4,), engine=other)])
    with pytest.raises(ValueError, match="the tensors differ"):
        comm.allreduce([a, de.zeros((5,), engine=engine)])


def test_the_example_under_mpirun():
    result = run_under_mpirun(EXAMPLE)
    for rank in (0, 1):
        assert f"process {rank} of 2: mean 2.50 on every device" in result.stdout, result.stdout
