"""Engine.capture and Engine.replay: pushes recorded once, pushed again many times."""

import numpy as np
import pytest

import depengine as de


def test_capture_records_and_replay_runs_in_order(any_engine):
    e = any_engine
    v = e.new_var("v")
    log = []
    g = e.capture(lambda: (e.push(lambda: log.append(1), writes=[v]), e.push(lambda: log.append(2), writes=[v])))
    e.wait_all()
    assert log == []  # recorded, not run
    assert len(g) == 2 and g.dependencies == 1
    for _ in range(3):
        e.replay(g)
        e.push(lambda: log.append(0), reads=[v])
    e.wait_all()
    assert log == [1, 2, 0] * 3
    assert "digraph" in g.to_dot()


def test_tensor_steps_replayed_match_eager_ones(any_engine):
    e = any_engine
    x = de.uniform((8, 8), seed=3, low=-1.0, high=1.0, engine=e)

    def run(replayed):
        w = de.uniform((8, 8), seed=4, low=-1.0, high=1.0, engine=e)

        def step():
            de.sgd_update(w, x @ w, 0.01)  # x @ w: a tensor of the graph's own

        if replayed:
            g = e.capture(step)
            for _ in range(10):
                e.replay(g)
        else:
            for _ in range(10):
                step()
        return w.asnumpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_blocking_inside_a_capture_raises(any_engine):
    e = any_engine
    v = e.new_var()
    with pytest.raises(RuntimeError, match="capture"):
        e.capture(lambda: e.wait_to_read(v))
    e.wait_to_read(v)  # capture is off again


def test_an_exception_in_the_body_goes_on(any_engine):
    e = any_engine

    def body():
        raise KeyError("in the body")

    with pytest.raises(KeyError):
        e.capture(body)


def test_errors_of_replayed_ops_are_raised_by_the_wait(any_engine):
    e = any_engine
    v = e.new_var()

    def fail():
        raise ValueError("replayed op failed")

    g = e.capture(lambda: e.push(fail, writes=[v]))
    e.replay(g)
    with pytest.raises(ValueError, match="replayed op failed"):
        e.wait_to_read(v)
    e.replay(g)  # the graph stays usable
    with pytest.raises(ValueError):
        e.wait_to_read(v)


def test_a_graph_of_another_engine_is_rejected():
    a = de.Engine(cpu_threads=1)
    b = de.Engine(cpu_threads=1)
    g = a.capture(lambda: a.push(lambda: None, writes=[a.new_var()]))
    with pytest.raises(ValueError, match="another engine"):
        b.replay(g)
    with pytest.raises(TypeError):
        a.capture(42)
