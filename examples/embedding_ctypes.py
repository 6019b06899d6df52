"""Driving depengine from Python through its C API with ctypes.

    python3 embedding_ctypes.py path/to/libdepengine.so

Pushes Python functions as operations (they run on the engine's worker
threads; ctypes takes the GIL for them), completes an asynchronous operation
from a Python thread, and shows how failures and misuse come back as status
codes with a message. Exits with 0 when every result is as expected.
"""

import ctypes
import sys
import threading

OK = 0
ERROR_UNKNOWN_VAR = 2
ERROR_OPERATION_FAILED = 3
ERROR_BAD_STATE = 4

# The types of c_api.h.
Var = ctypes.c_uint64
Completion = ctypes.c_uint64
OpFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
AsyncOpFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, Completion)


class EngineOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("kind", ctypes.c_int),
        ("cpu_threads", ctypes.c_int),
        ("max_ops_in_flight", ctypes.c_size_t),
        ("read_environment", ctypes.c_int),
    ]


def load(path):
    lib = ctypes.CDLL(path)  # CDLL releases the GIL during calls: waits do not block Python threads
    P = ctypes.c_void_p
    signatures = {
        "depengine_c_api_version": ([], ctypes.c_int),
        "depengine_last_error": ([], ctypes.c_char_p),
        "depengine_status_name": ([ctypes.c_int], ctypes.c_char_p),
        "depengine_engine_options_init": ([ctypes.POINTER(EngineOptions)], ctypes.c_int),
        "depengine_engine_create": ([ctypes.POINTER(EngineOptions), ctypes.POINTER(P)], ctypes.c_int),
        "depengine_engine_destroy": ([P], ctypes.c_int),
        "depengine_new_var": ([P, ctypes.c_char_p, ctypes.POINTER(Var)], ctypes.c_int),
        "depengine_delete_var": ([P, Var, P, P], ctypes.c_int),
        "depengine_push": ([P, OpFn, P, ctypes.POINTER(Var), ctypes.c_size_t,
                            ctypes.POINTER(Var), ctypes.c_size_t, P], ctypes.c_int),
        "depengine_push_async": ([P, AsyncOpFn, P, ctypes.POINTER(Var), ctypes.c_size_t,
                                  ctypes.POINTER(Var), ctypes.c_size_t, P], ctypes.c_int),
        "depengine_complete": ([Completion, ctypes.c_char_p], ctypes.c_int),
        "depengine_op_fail": ([P, ctypes.c_char_p], ctypes.c_int),
        "depengine_wait_to_read": ([P, Var], ctypes.c_int),
        "depengine_wait_all": ([P], ctypes.c_int),
    }
    for name, (argtypes, restype) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = restype
    return lib


class Engine:
    """A small Pythonic wrapper: raises on errors, keeps callbacks alive."""

    def __init__(self, lib, cpu_threads=2):
        self.lib = lib
        options = EngineOptions()
        self.check(lib.depengine_engine_options_init(ctypes.byref(options)))
        options.cpu_threads = cpu_threads
        self.handle = ctypes.c_void_p()
        self.check(lib.depengine_engine_create(ctypes.byref(options), ctypes.byref(self.handle)))
        # ctypes callbacks must outlive the operations that call them.
        self.keep_alive = []

    def check(self, status):
        if status != OK:
            name = self.lib.depengine_status_name(status).decode()
            raise RuntimeError(f"{name}: {self.lib.depengine_last_error().decode()}")

    def new_var(self, name):
        var = Var()
        self.check(self.lib.depengine_new_var(self.handle, name.encode(), ctypes.byref(var)))
        return var.value

    @staticmethod
    def _array(vars_):
        return (Var * len(vars_))(*vars_), len(vars_)

    def push(self, fn, reads=(), writes=()):
        """fn(ctx) runs on an engine thread; it may call self.fail(ctx, msg)."""
        callback = OpFn(lambda _user, ctx: fn(ctx))
        self.keep_alive.append(callback)
        r, nr = self._array(reads)
        w, nw = self._array(writes)
        self.check(self.lib.depengine_push(self.handle, callback, None, r, nr, w, nw, None))

    def push_async(self, start, reads=(), writes=()):
        """start(done) begins the work; whoever finishes it calls self.complete(done)."""
        callback = AsyncOpFn(lambda _user, _ctx, done: start(done))
        self.keep_alive.append(callback)
        r, nr = self._array(reads)
        w, nw = self._array(writes)
        self.check(self.lib.depengine_push_async(self.handle, callback, None, r, nr, w, nw, None))

    def complete(self, done, error=None):
        return self.lib.depengine_complete(done, error.encode() if error else None)

    def fail(self, ctx, message):
        self.check(self.lib.depengine_op_fail(ctx, message.encode()))

    def wait_to_read(self, var):
        return self.lib.depengine_wait_to_read(self.handle, var)

    def last_error(self):
        return self.lib.depengine_last_error().decode()

    def close(self):
        self.check(self.lib.depengine_engine_destroy(self.handle))
        self.keep_alive.clear()


def main():
    lib = load(sys.argv[1] if len(sys.argv) > 1 else "libdepengine.so")
    assert lib.depengine_c_api_version() >= 1, "a library older than the C API this example uses"
    engine = Engine(lib)

    # A pipeline: an asynchronous load finished by a Python thread, then two
    # Python operations on the engine's workers.
    data, result = [], {}
    vdata, vsum = engine.new_var("data"), engine.new_var("sum")

    def start_load(done):
        def io():
            data.extend(range(1, 101))
            engine.complete(done)
        threading.Thread(target=io).start()

    engine.push_async(start_load, writes=[vdata])
    engine.push(lambda ctx: data.__setitem__(slice(None), [x * 2 for x in data]), writes=[vdata])
    engine.push(lambda ctx: result.__setitem__("sum", sum(data)), reads=[vdata], writes=[vsum])
    engine.check(engine.wait_to_read(vsum))
    print("sum =", result["sum"])
    assert result["sum"] == 2 * 5050

    # A failed operation: its message comes back from the wait.
    vcfg = engine.new_var("config")
    engine.push(lambda ctx: engine.fail(ctx, "bad config"), writes=[vcfg])
    status = engine.wait_to_read(vcfg)
    print("wait_to_read(config):", lib.depengine_status_name(status).decode(), "-", engine.last_error())
    assert status == ERROR_OPERATION_FAILED and engine.last_error() == "bad config"

    # Misuse is a status code too, never a crash: a completion called twice,
    # a variable that does not exist.
    handles = []
    engine.push_async(lambda done: (handles.append(done), engine.complete(done)), writes=[vdata])
    engine.check(engine.wait_to_read(vdata))
    assert engine.complete(handles[0]) == ERROR_BAD_STATE
    assert engine.wait_to_read(12345) == ERROR_UNKNOWN_VAR
    print("misuse reported:", engine.last_error())

    engine.close()
    print("ok")


if __name__ == "__main__":
    main()
