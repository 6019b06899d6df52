"""The profiler from Python."""

import json

import pytest

import depengine as de


def test_profile_writes_a_trace_and_a_table(engine, tmp_path):
    path = tmp_path / "trace.json"
    x = de.ones((32, 32), engine=engine)
    with de.profiler.profile(path, engine=engine) as prof:
        for _ in range(5):
            x = x @ x * 0.01
        v = engine.new_var("py")
        engine.push(lambda: None, writes=[v], name="python step")
    trace = json.loads(path.read_text())
    assert isinstance(trace, (dict, list))
    names = {s.name for s in prof.key_averages()}
    assert "python step" in names
    assert any("gemm" in n or "matmul" in n for n in names)
    table = str(prof.key_averages())
    assert "python step" in table
    by_count = prof.key_averages(sort_by="count")
    assert by_count[0].count == max(s.count for s in by_count)
    ops = prof.ops()
    assert len(ops) >= 11 and all(op.duration_us >= 0 for op in ops)
    assert prof.wall_us > 0
    assert "traceEvents" in prof.trace_json()
    with pytest.raises(ValueError):
        prof.key_averages(sort_by="speed")


def test_profile_the_default_engine():
    with de.profiler.profile() as prof:
        (de.ones(4) + 1).wait_to_read()
    assert sum(s.count for s in prof.key_averages()) >= 2


def test_profile_stops_when_the_block_raises(engine):
    with pytest.raises(KeyError):
        with de.profiler.profile(engine=engine) as prof:
            raise KeyError("inside")
    # Stopped: a second profiler may start.
    with de.profiler.profile(engine=engine):
        pass
    assert prof.ops() == []


def test_profile_outside_a_with_block():
    with pytest.raises(RuntimeError):
        de.profiler.profile().key_averages()
