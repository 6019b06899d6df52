"""Interpreter exit with work in flight: every program here must exit cleanly."""

import subprocess
import sys
import textwrap

import pytest


def run(code: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"exit code {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Fatal Python error" not in result.stderr
    return result


def test_queued_python_functions_run_before_exit():
    result = run(
        """
        import time
        import depengine as de
        e = de.default_engine()
        v = e.new_var("v")
        done = []
        for i in range(20):
            e.push(lambda i=i: (time.sleep(0.005), done.append(i)), writes=[v])
        e.push(lambda: print("last ran after", len(done), flush=True), writes=[v])
        """
    )
    assert "last ran after 20" in result.stdout


def test_native_work_in_flight_on_a_user_engine():
    run(
        """
        import depengine as de
        engine = de.Engine(cpu_threads=2)
        x = de.normal((256, 256), seed=1, engine=engine)
        for _ in range(50):
            x = de.relu(x @ x) * 0.01
        """
    )


def test_unreported_python_exception_at_exit():
    result = run(
        """
        import depengine as de
        e = de.Engine(cpu_threads=1)
        v = e.new_var("v")
        def fails():
            raise ValueError("never reported")
        e.push(fails, writes=[v])
        e.push(lambda: None, reads=[v], writes=[e.new_var()])
        print("exiting", flush=True)
        """
    )
    assert "exiting" in result.stdout
    assert "leaked" not in result.stderr


def test_reported_exception_leaves_nothing_behind():
    result = run(
        """
        import depengine as de
        e = de.default_engine()
        v = e.new_var("v")
        t = de.ones(3)
        def fails():
            raise KeyError("boom")
        e.push(fails, writes=[v])
        try:
            e.wait_to_read(v)
        except KeyError:
            pass
        """
    )
    assert "leaked" not in result.stderr


def test_daemon_thread_pushing_while_the_interpreter_exits():
    run(
        """
        import threading, time
        import depengine as de
        e = de.Engine(cpu_threads=2, max_ops_in_flight=64)  # a short queue to drain at exit
        v = e.new_var("v")
        def pusher():
            while True:
                try:
                    e.push(lambda: time.sleep(0.0005), writes=[v])
                    (de.ones(8, engine=e) + 1.0)
                except RuntimeError:
                    return  # "the interpreter is shutting down"
        threading.Thread(target=pusher, daemon=True).start()
        time.sleep(0.2)
        """
    )


def test_last_reference_dropped_inside_a_pushed_function():
    # The closure holds the only references to a tensor and so to its
    # engine: they go when the function has run, on a worker.
    run(
        """
        import gc, time
        import depengine as de
        def make():
            e = de.Engine(cpu_threads=1)
            t = de.ones(4, engine=e)
            v = e.new_var()
            e.push(lambda: (time.sleep(0.05), t.shape), writes=[v])
        make()
        gc.collect()
        time.sleep(0.3)
        print("ok")
        """
    )


@pytest.mark.parametrize("kind", ["threaded", "naive"])
def test_python_function_pushed_after_the_drain_is_refused(kind):
    # atexit runs its handlers last registered first: this one, registered
    # before depengine's, runs after depengine has drained its engines.
    result = run(
        f"""
        import atexit
        def late():
            try:
                e.push(lambda: print("ran"), writes=[e.new_var()])
            except RuntimeError as error:
                print("refused:", error, flush=True)
            (de.ones(4, engine=e) + 1.0).asnumpy()  # native ops still work
        atexit.register(late)
        import depengine as de
        e = de.Engine(kind="{kind}")
        """
    )
    assert "refused: depengine: the interpreter is shutting down" in result.stdout
    assert "ran" not in result.stdout
