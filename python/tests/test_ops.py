"""The ops library against NumPy."""

import numpy as np
import pytest

import depengine as de


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def t(engine, a):
    return de.array(np.asarray(a), engine=engine)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise(engine, rng, dtype):
    a = rng.standard_normal((5, 4)).astype(dtype)
    b = rng.standard_normal((5, 4)).astype(dtype)
    ta, tb = t(engine, a), t(engine, b)
    np.testing.assert_allclose(de.add(ta, tb).asnumpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(de.sub(ta, tb).asnumpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose(de.mul(ta, tb).asnumpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose(de.scale(ta, 0.5).asnumpy(), a * 0.5, rtol=1e-6)
    np.testing.assert_allclose(de.relu(ta).asnumpy(), np.maximum(a, 0))
    np.testing.assert_allclose(ta.relu().asnumpy(), np.maximum(a, 0))
    g = rng.standard_normal((5, 4)).astype(dtype)
    np.testing.assert_allclose(de.relu_grad(ta, t(engine, g)).asnumpy(), np.where(a > 0, g, 0))
    y = t(engine, b)
    de.axpy(2.0, ta, y)
    np.testing.assert_allclose(y.asnumpy(), b + 2 * a, rtol=1e-6)


def test_out_arguments(engine):
    a = t(engine, np.ones(3, np.float32))
    out = de.zeros(3, engine=engine)
    r = de.add(a, a, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [2, 2, 2])
    np.testing.assert_array_equal(r.asnumpy(), [2, 2, 2])
    de.relu(de.scale(a, -1.0), out=out)
    np.testing.assert_array_equal(out.asnumpy(), [0, 0, 0])
    with pytest.raises(TypeError):
        de.add(a, a, out=np.zeros(3))


def test_reductions(engine, rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    ta = t(engine, a)
    assert de.sum(ta).shape == ()
    np.testing.assert_allclose(de.sum(ta).item(), a.sum(), rtol=1e-5)
    np.testing.assert_allclose(de.mean(ta).item(), a.mean(), rtol=1e-5)
    np.testing.assert_allclose(de.sum(ta, 0).asnumpy(), a.sum(0), rtol=1e-5)
    np.testing.assert_allclose(ta.sum(axis=1).asnumpy(), a.sum(1), rtol=1e-5)
    np.testing.assert_allclose(ta.mean(-1).asnumpy(), a.mean(1), rtol=1e-5)
    out = de.zeros((), engine=engine)
    de.sum(ta, out=out)
    np.testing.assert_allclose(out.item(), a.sum(), rtol=1e-5)
    with pytest.raises(ValueError):
        de.sum(ta, 5)


def test_matmul_and_gemm(engine, rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    ta, tb = t(engine, a), t(engine, b)
    np.testing.assert_allclose(de.matmul(ta, tb).asnumpy(), a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(de.matmul(ta, ta, trans_b=True).asnumpy(), a @ a.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(de.matmul(ta, ta, trans_a=True).asnumpy(), a.T @ a, rtol=1e-5, atol=1e-6)
    c = t(engine, np.ones((3, 2), np.float32))
    de.gemm(ta, tb, c, alpha=2.0, beta=1.0)
    np.testing.assert_allclose(c.asnumpy(), 2 * (a @ b) + 1, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        de.matmul(ta, ta)


def test_softmax_cross_entropy(engine, rng):
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([0, 1, 2, 3, 0, 1], np.int32)
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    loss_ref = -np.log(p[np.arange(6), labels]).mean()
    onehot = np.eye(4, dtype=np.float32)[labels]
    loss, grad = de.softmax_cross_entropy(t(engine, logits), t(engine, labels), grad=True)
    np.testing.assert_allclose(loss.item(), loss_ref, rtol=1e-5)
    np.testing.assert_allclose(grad.asnumpy(), (p - onehot) / 6, rtol=1e-4, atol=1e-6)
    only = de.softmax_cross_entropy(t(engine, logits), t(engine, labels))
    np.testing.assert_allclose(only.item(), loss_ref, rtol=1e-5)


def test_sgd_update(engine):
    w = t(engine, np.array([1.0, 2.0], np.float32))
    de.sgd_update(w, t(engine, np.array([0.5, -0.5], np.float32)), 0.1, weight_decay=0.1)
    np.testing.assert_allclose(w.asnumpy(), [1 - 0.1 * (0.5 + 0.1), 2 - 0.1 * (-0.5 + 0.2)], rtol=1e-6)


def test_fill_copy_cast(engine):
    x = de.zeros(3, engine=engine)
    de.fill(x, 4.0)
    y = de.zeros(3, dtype="float64", engine=engine)
    de.copy(x, y)
    np.testing.assert_array_equal(y.asnumpy(), [4, 4, 4])
    h = de.cast(x, "float16")
    assert h.dtype == "float16" and h.asnumpy().dtype == np.float16
    with pytest.raises(ValueError):
        de.copy(x, de.zeros(4, engine=engine))


def test_chains_are_ordered(any_engine):
    x = de.zeros(16, engine=any_engine)
    for _ in range(200):
        x += 1.0
        x *= 1.0
    assert x.sum().item() == 16 * 200


def test_naive_and_threaded_agree(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    results = []
    for kind in ("naive", "threaded"):
        e = de.Engine(kind=kind, cpu_threads=2)
        x = de.array(a, engine=e)
        for _ in range(5):
            x = de.relu(x @ x) * 0.1 + x
        results.append(x.asnumpy())
    np.testing.assert_array_equal(results[0], results[1])
