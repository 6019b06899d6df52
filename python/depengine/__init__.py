"""depengine: an asynchronous dependency engine, driven from Python.

Every operation is pushed to the engine and returns at once; the engine's
worker threads run it once the operations it depends on have run. The
program waits only at a blocker: ``asnumpy()``, ``item()``, ``float(t)``,
``print(t)``, ``wait_to_read``, ``wait_all``.

    import depengine as de
    a = de.normal((256, 256), seed=1)
    b = de.normal((256, 256), seed=2)
    c = de.relu(a @ b) + 1.0      # pushed, not yet computed
    print(c.sum().item())         # the blocker

See docs/python.md for the API, the GIL, threads and errors.
"""

from ._depengine import (
    Communicator,
    Engine,
    Graph,
    KVStore,
    OpStats,
    ProfiledOp,
    Tensor,
    Var,
    add,
    array,
    axpy,
    cast,
    copy,
    default_engine,
    empty,
    fill,
    from_dlpack,
    full,
    gemm,
    matmul,
    mean,
    mul,
    normal,
    ones,
    relu,
    relu_grad,
    scale,
    seed,
    sgd_update,
    softmax_cross_entropy,
    sub,
    sum,
    uniform,
    wait_all,
    zeros,
)
from . import profiler

__version__ = "0.1.0"

__all__ = [
    "Communicator",
    "Engine",
    "Graph",
    "KVStore",
    "OpStats",
    "ProfiledOp",
    "Tensor",
    "Var",
    "add",
    "array",
    "axpy",
    "cast",
    "copy",
    "default_engine",
    "empty",
    "fill",
    "from_dlpack",
    "full",
    "gemm",
    "matmul",
    "mean",
    "mul",
    "normal",
    "ones",
    "profiler",
    "relu",
    "relu_grad",
    "scale",
    "seed",
    "sgd_update",
    "softmax_cross_entropy",
    "sub",
    "sum",
    "uniform",
    "wait_all",
    "zeros",
]
