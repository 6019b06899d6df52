"""Engine, Var, push of Python functions and the blocking calls."""

import os
import threading

import pytest

import depengine as de


def test_engine_options_and_repr():
    e = de.Engine(cpu_threads=2, kind="threaded", max_ops_in_flight=128, read_environment=False)
    assert e.kind == "threaded"
    assert e.cpu_threads == 2
    assert repr(e) == "Engine(kind='threaded', cpu_threads=2)"
    n = de.Engine(kind="naive", read_environment=False)
    assert n.kind == "naive" and n.cpu_threads == 1


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"kind": "eager"}, ValueError),
        ({"cpu_threads": -1}, ValueError),
        ({"max_ops_in_flight": 0}, ValueError),
        ({"cpu_threads": "two"}, TypeError),
    ],
)
def test_engine_rejects_bad_options(kwargs, error):
    with pytest.raises(error):
        de.Engine(**kwargs)


def test_default_engine_is_one_engine():
    assert de.default_engine() == de.default_engine()
    assert de.zeros(2).engine == de.default_engine()


def test_push_orders_by_declared_variables(any_engine):
    e = any_engine
    v = e.new_var("v")
    log = []
    for i in range(50):
        e.push(lambda i=i: log.append(i), writes=[v])
    e.wait_to_read(v)
    assert log == list(range(50))


def test_reads_wait_for_writes_and_writes_for_reads(engine):
    e = engine
    a, b = e.new_var("a"), e.new_var("b")
    state = {"a": 0, "b": 0}
    gate = threading.Event()

    def slow_write():
        gate.wait(10)
        state["a"] = 1

    e.push(slow_write, writes=[a])
    e.push(lambda: state.__setitem__("b", state["a"] + 1), reads=[a], writes=[b])
    e.push(lambda: state.__setitem__("a", 100), writes=[a])  # after the read of a
    gate.set()
    e.wait_to_read(b)
    assert state["b"] == 2
    e.wait_to_write(a)
    assert state["a"] == 100


def test_independent_python_functions_overlap(engine):
    # Two functions that each wait for the other can only finish when they
    # run at the same time: on two workers, with the GIL released while waiting.
    e = engine
    a, b = e.new_var("a"), e.new_var("b")
    first, second = threading.Event(), threading.Event()
    results = []

    def f():
        first.set()
        results.append(second.wait(10))

    def g():
        second.set()
        results.append(first.wait(10))

    e.push(f, writes=[a])
    e.push(g, writes=[b])
    e.wait_all()
    assert results == [True, True]


def test_priority_and_name_are_accepted(engine):
    v = engine.new_var("v")
    out = []
    engine.push(lambda: out.append("x"), writes=v, priority=5, name="named op")
    engine.wait_to_read(v)
    assert out == ["x"]


def test_bytes_is_a_hint_and_must_be_a_size(engine):
    v = engine.new_var("v")
    out = []
    engine.push(lambda: out.append("x"), writes=v, bytes=1 << 20)
    engine.wait_to_read(v)
    assert out == ["x"]
    with pytest.raises(TypeError):
        engine.push(lambda: None, writes=v, bytes=-1)


def test_tensors_as_dependencies(engine):
    t = de.zeros(3, engine=engine)
    seen = []
    de.add(t, 1.0, out=t)
    engine.push(lambda: seen.append("after add"), reads=[t])
    engine.wait_all()
    assert seen == ["after add"]
    assert t.asnumpy().tolist() == [1.0, 1.0, 1.0]


def test_exception_propagates_with_type_and_traceback(any_engine):
    e = any_engine
    v = e.new_var("v")

    def fails():
        raise KeyError("missing key")

    e.push(fails, writes=[v], name="lookup")
    with pytest.raises(KeyError) as info:
        e.wait_to_read(v)
    assert info.value.args == ("missing key",)
    frames = [f.name for f in info.traceback]
    assert "fails" in frames
    # Reported once; the engine goes on working.
    e.push(lambda: None, writes=[v])
    e.wait_to_read(v)


def test_failure_reaches_dependents_and_keeps_its_type(engine):
    e = engine
    v, w = e.new_var("v"), e.new_var("w")
    ran = []

    class MyError(Exception):
        pass

    def fails():
        raise MyError("first", 2)

    e.push(fails, writes=[v])
    e.push(lambda: ran.append(1), reads=[v], writes=[w])  # skipped
    with pytest.raises(MyError):
        e.wait_to_read(w)
    with pytest.raises(MyError) as info:
        e.wait_to_read(v)
    assert info.value.args == ("first", 2)
    assert ran == []


def test_wait_all_reports_an_error(engine):
    v = engine.new_var("v")
    engine.push(lambda: 1 / 0, writes=[v])
    with pytest.raises(ZeroDivisionError):
        engine.wait_all()


def test_blocker_inside_a_pushed_function_is_a_runtime_error(any_engine):
    e = any_engine
    v, w = e.new_var("v"), e.new_var("w")
    t = de.ones(2, engine=e)
    caught = []

    def blocks():
        for blocker in (lambda: e.wait_to_read(v), lambda: e.wait_all(), lambda: t.asnumpy(), lambda: t.item()):
            try:
                blocker()
            except (RuntimeError, ValueError) as error:
                caught.append(type(error))

    e.push(blocks, writes=[w])
    e.wait_to_read(w)
    assert caught[:3] == [RuntimeError, RuntimeError, RuntimeError]
    assert len(caught) == 4  # item() of a 2-element tensor is a ValueError before it would block

    def uncaught():
        e.wait_to_read(v)

    e.push(uncaught, writes=[w])
    with pytest.raises(RuntimeError, match="inside an operation"):
        e.wait_to_read(w)


def test_push_from_inside_a_pushed_function(engine):
    e = engine
    v = e.new_var("v")
    out = []

    def outer():
        e.push(lambda: out.append("inner"), writes=[v])
        out.append("outer")

    e.push(outer, writes=[v])
    e.wait_all()
    e.wait_to_read(v)
    assert out == ["outer", "inner"]


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda e, v: e.push(42), TypeError),
        (lambda e, v: e.push(lambda: None, reads=[1]), TypeError),
        (lambda e, v: e.push(lambda: None, reads="v"), TypeError),
        (lambda e, v: e.push(lambda: None, reads=[v], writes=[v]), ValueError),
        (lambda e, v: e.push(lambda: None, writes=[v, v]), ValueError),
        (lambda e, v: e.push(lambda: None, writes=[v], device="tpu:0"), ValueError),
        (lambda e, v: e.push(lambda: None, writes=[v], device="emulated:3"), ValueError),
        (lambda e, v: e.wait_to_read(3), TypeError),
    ],
)
def test_bad_pushes_are_rejected(engine, call, error):
    v = engine.new_var("v")
    with pytest.raises(error):
        call(engine, v)
    engine.wait_all()


def test_variable_of_another_engine_is_rejected(engine):
    other = de.Engine(cpu_threads=1)
    v = other.new_var("foreign")
    with pytest.raises(ValueError):
        engine.push(lambda: None, writes=[v])
    with pytest.raises(ValueError):
        engine.delete_var(v)
    t = de.zeros(2, engine=other)
    with pytest.raises(ValueError):
        engine.push(lambda: None, reads=[t])
    with pytest.raises(ValueError):
        engine.wait_to_read(t)


def test_delete_var(engine):
    v = engine.new_var("gone")
    assert repr(v) == "Var('gone')" and v.name == "gone"
    engine.push(lambda: None, writes=[v])
    engine.delete_var(v)
    assert v.deleted
    with pytest.raises(ValueError, match="deleted"):
        engine.push(lambda: None, writes=[v])
    with pytest.raises(ValueError, match="already deleted"):
        engine.delete_var(v)
    t = de.zeros(1, engine=engine)
    with pytest.raises(ValueError, match="tensor"):
        engine.delete_var(t.var)


def test_var_identity(engine):
    a, b = engine.new_var("a"), engine.new_var("b")
    assert a == a and a != b
    assert len({a, b, a}) == 2


def test_threads_pushing_at_once(engine):
    e = engine
    counters = [0] * 4
    vars_ = [e.new_var(f"c{i}") for i in range(4)]
    shared = e.new_var("shared")
    total = []

    def producer(k):
        for _ in range(500):
            def bump(k=k):
                counters[k] += 1
            e.push(bump, writes=[vars_[k]])
            de.add(t, 1.0, out=t)
        e.push(lambda: total.append(1), writes=[shared])

    t = de.zeros(1, engine=e)
    threads = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    e.wait_all()
    assert counters == [500] * 4
    assert total == [1] * 4
    assert t.item() == 2000.0


def test_python_threads_run_while_the_main_thread_blocks(engine):
    # The GIL is released inside wait_to_read: a Python thread the pushed
    # function waits for gets to run.
    v = engine.new_var("v")
    released = threading.Event()

    def wait_for_the_timer():
        if not released.wait(10):
            raise TimeoutError("the Python thread never ran")

    engine.push(wait_for_the_timer, writes=[v])
    threading.Timer(0.05, released.set).start()
    engine.wait_to_read(v)


def test_back_pressure_with_python_functions_does_not_deadlock():
    e = de.Engine(cpu_threads=2, max_ops_in_flight=8)
    v = e.new_var("v")
    count = [0]

    def inc():
        count[0] += 1

    for _ in range(2000):
        e.push(inc, writes=[v])
    e.wait_all()
    assert count[0] == 2000


def test_engine_as_context_manager():
    out = []
    with de.Engine(cpu_threads=1) as e:
        v = e.new_var()
        e.push(lambda: out.append(1), writes=[v])
    assert out == [1]


def test_module_wait_all_waits_for_every_engine():
    engines = [de.Engine(cpu_threads=1) for _ in range(2)]
    out = []
    for e in engines:
        e.push(lambda: out.append(1), writes=[e.new_var()])
    de.wait_all()
    assert out == [1, 1]


def test_emulated_device_runs_python_functions_on_its_streams(engine):
    engine.add_emulated_device(0, compute_streams=2)
    assert engine.has_device("emulated:0") and not engine.has_device("emulated:1")
    with pytest.raises(ValueError):
        engine.add_emulated_device(0)
    v = engine.new_var("on device")
    out = []
    engine.push(lambda: out.append(threading.current_thread() is not threading.main_thread()), writes=[v],
                device="emulated:0")
    engine.wait_to_read(v)
    assert out == [True]


def test_dropping_everything_with_work_in_flight():
    # The engine lives while anything made from it does; its last user's
    # release waits for the work, which may need the GIL.
    out = []

    def make():
        e = de.Engine(cpu_threads=1)
        v = e.new_var()
        for i in range(100):
            e.push(lambda i=i: out.append(i), writes=[v])

    make()
    import gc

    gc.collect()
    assert out == list(range(100))


def test_pushed_functions_are_released_run_or_skipped(engine):
    import sys

    def fn():
        pass

    before = sys.getrefcount(fn)
    v = engine.new_var("v")
    for _ in range(200):
        engine.push(fn, writes=[v])
    engine.wait_to_read(v)
    assert sys.getrefcount(fn) == before

    failed = engine.new_var("failed")
    engine.push(lambda: 1 / 0, writes=[failed])
    for _ in range(50):
        engine.push(fn, reads=[failed], writes=[v])  # skipped: never called
    with pytest.raises(ZeroDivisionError):
        engine.wait_to_read(v)
    with pytest.raises(ZeroDivisionError):  # reported again on the variable that failed first
        engine.wait_to_read(failed)
    engine.wait_all()
    assert sys.getrefcount(fn) == before


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident set size from /proc")
def test_dropped_tensors_free_their_storage(engine):
    def resident_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    x = de.ones(1 << 20, engine=engine)  # 4 MiB
    (x + 1.0).wait_to_read()
    start = resident_mb()
    for _ in range(200):  # 800 MiB if nothing were freed
        x = x + 1.0
        # Without a wait, every output is allocated before the ops run
        # (asynchrony's price); with it, the dropped input's deletion runs
        # and its storage is reused.
        engine.wait_all()
    assert x.asnumpy()[0] == 201.0
    assert resident_mb() - start < 100
