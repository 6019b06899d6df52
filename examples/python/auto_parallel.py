"""Automatic parallelism: two independent matrix products at once.

Two chains of matrix products share no tensor, so the engine runs them on
two workers at the same time without being told. Run one after the other
(waiting for the first before pushing the second), they take the sum of
their times; pushed together, about the longer one.

    python examples/python/auto_parallel.py [--n 384] [--products 12]

OpenBLAS is limited to one thread per product (OPENBLAS_NUM_THREADS=1) so
that the parallelism measured is the engine's. Checks that both orders give
the same results.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when depengine loads OpenBLAS

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import depengine as de  # noqa: E402


def chain(x: de.Tensor, w: de.Tensor, products: int) -> de.Tensor:
    for _ in range(products):
        x = x @ w  # w has variance 1/n: x keeps its scale
    return x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=384)
    parser.add_argument("--products", type=int, default=12)
    args = parser.parse_args()
    n = args.n
    engine = de.Engine(cpu_threads=2)
    xa = de.normal((n, n), seed=1, engine=engine)
    xb = de.normal((n, n), seed=2, engine=engine)
    w = de.normal((n, n), 0.0, 1.0 / np.sqrt(n), seed=3, engine=engine)
    engine.wait_all()
    chain(xa, w, 2).wait_to_read()  # warm up

    start = time.perf_counter()
    a = chain(xa, w, args.products)
    a.wait_to_read()
    b = chain(xb, w, args.products)
    b.wait_to_read()
    one_after_the_other = time.perf_counter() - start

    start = time.perf_counter()
    a2 = chain(xa, w, args.products)
    b2 = chain(xb, w, args.products)
    a2.wait_to_read()
    b2.wait_to_read()
    both_at_once = time.perf_counter() - start

    print(f"two chains of {args.products} products of {n}x{n} matrices on {engine}")
    print(f"one after the other: {one_after_the_other * 1e3:8.2f} ms")
    print(f"both at once:        {both_at_once * 1e3:8.2f} ms")
    print(f"speedup: {one_after_the_other / both_at_once:.2f}x")
    if not (np.array_equal(a.asnumpy(), a2.asnumpy()) and np.array_equal(b.asnumpy(), b2.asnumpy())):
        print("the two orders gave different results", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
