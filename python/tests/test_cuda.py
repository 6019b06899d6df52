"""Tensors on a GPU (skipped without one, or when the module was built without CUDA)."""

import numpy as np
import pytest

import depengine as de

pytestmark = pytest.mark.skipif(
    not de.default_engine().has_device("cuda:0"), reason="no CUDA GPU (or depengine built without CUDA)"
)


def test_ops_on_the_gpu_match_numpy():
    a = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    ta, tb = de.array(a, device="cuda:0"), de.array(b, device="cuda:0")
    assert ta.device == "cuda:0"
    c = de.relu(ta @ tb) + 1.0
    np.testing.assert_allclose(c.asnumpy(), np.maximum(a @ b, 0) + 1, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c.sum().item(), (np.maximum(a @ b, 0) + 1).sum(), rtol=1e-4)


def test_copies_between_host_and_gpu():
    t = de.array(np.arange(10, dtype=np.float32))
    g = t.copy_to("cuda:0")
    np.testing.assert_array_equal((g * 2).copy_to("cpu").asnumpy(), np.arange(10) * 2)


def test_dlpack_names_the_gpu():
    g = de.ones(4, device="cuda:0")
    assert g.__dlpack_device__() == (2, 0)
    capsule = g.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
