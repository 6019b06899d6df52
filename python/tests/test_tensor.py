"""Tensor creation, the blockers, NumPy and DLPack interop, operators."""

import numpy as np
import pytest

import depengine as de


def test_creation_functions(engine):
    z = de.zeros((2, 3), engine=engine)
    assert z.shape == (2, 3) and z.dtype == "float32" and z.device == "cpu"
    assert z.ndim == 2 and z.size == 6 and z.nbytes == 24 and len(z) == 2
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(de.ones(4, dtype="float64", engine=engine).asnumpy(), np.ones(4))
    np.testing.assert_array_equal(de.full((2,), 7.5, dtype=np.float64, engine=engine).asnumpy(), [7.5, 7.5])
    assert de.zeros((), engine=engine).shape == ()
    assert de.zeros((0, 4), engine=engine).asnumpy().shape == (0, 4)
    assert de.full(3, 2, dtype="int32", engine=engine).asnumpy().dtype == np.int32


def test_random_tensors_are_seeded(engine):
    u1 = de.uniform((1000,), -2.0, 3.0, seed=7, engine=engine).asnumpy()
    u2 = de.uniform((1000,), -2.0, 3.0, seed=7, engine=engine).asnumpy()
    np.testing.assert_array_equal(u1, u2)
    assert u1.min() >= -2.0 and u1.max() < 3.0
    n = de.normal((20000,), 1.0, 2.0, seed=3, engine=engine).asnumpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    de.seed(11)
    a = de.uniform(8, engine=engine).asnumpy()
    de.seed(11)
    b = de.uniform(8, engine=engine).asnumpy()
    c = de.uniform(8, engine=engine).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)
    with pytest.raises(ValueError):
        de.uniform(3, 1.0, 0.0)
    with pytest.raises(ValueError):
        de.normal(3, 0.0, -1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
def test_array_round_trip(engine, dtype):
    a = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    t = de.array(a, engine=engine)
    assert t.dtype == np.dtype(dtype).name and t.shape == (3, 4)
    back = t.asnumpy()
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), a.astype(np.float64))


def test_array_copies_its_input(engine):
    a = np.ones(3, np.float32)
    t = de.array(a, engine=engine)
    a[:] = 5
    np.testing.assert_array_equal(t.asnumpy(), [1, 1, 1])


def test_non_contiguous_arrays_are_copied_in_order(engine):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(de.array(a.T, engine=engine).asnumpy(), a.T)
    np.testing.assert_array_equal(de.array(a[:, ::2], engine=engine).asnumpy(), a[:, ::2])


def test_lists_and_numbers(engine):
    assert de.array([1.5, 2.5], engine=engine).dtype == "float32"
    assert de.array([[1, 2], [3, 4]], engine=engine).dtype == "int32"
    assert de.array(3.0, engine=engine).shape == ()
    assert de.array([1, 2], dtype="float64", engine=engine).dtype == "float64"
    np.testing.assert_array_equal(de.array([[1, 2], [3, 4]], engine=engine).asnumpy(), [[1, 2], [3, 4]])


def test_bfloat16(engine):
    t = de.array([1.0, 2.5, -3.0], dtype="bfloat16", engine=engine)
    assert t.dtype == "bfloat16"
    back = t.asnumpy()  # NumPy has no bfloat16: float32
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, [1.0, 2.5, -3.0])


@pytest.mark.parametrize(
    "data, kwargs, error",
    [
        (np.arange(3), {}, TypeError),  # int64
        (np.ones(3, np.complex64), {}, TypeError),
        (np.ones(3, bool), {}, TypeError),
        ([1.0], {"dtype": "int8"}, TypeError),
        ([1.0], {"dtype": 3.5}, TypeError),
        ([1.0], {"device": "tpu"}, ValueError),
        ([1.0], {"device": 0}, TypeError),
        ([1.0], {"device": "emulated:x"}, ValueError),
        ([1.0], {"engine": "e"}, TypeError),
    ],
)
def test_array_bad_input(data, kwargs, error):
    with pytest.raises(error):
        de.array(data, **kwargs)


@pytest.mark.parametrize(
    "shape, error", [((-1, 2), ValueError), ((2.0,), TypeError), ("ab", TypeError), ((True,), TypeError)]
)
def test_bad_shapes(shape, error):
    with pytest.raises(error):
        de.zeros(shape)


def test_item_float_int_bool(engine):
    t = de.full((), 2.5, engine=engine)
    assert t.item() == 2.5 and float(t) == 2.5 and int(t) == 2 and bool(t)
    i = de.full((1,), 7, dtype="int32", engine=engine)
    assert i.item() == 7 and isinstance(i.item(), int)
    with pytest.raises(ValueError, match="one element"):
        de.zeros(3, engine=engine).item()
    with pytest.raises(ValueError):
        bool(de.zeros(3, engine=engine))
    with pytest.raises(TypeError):
        len(de.zeros((), engine=engine))


def test_repr_and_print_show_the_values(engine, capsys):
    t = de.array([[1.0, 2.0], [3.0, 4.0]], engine=engine)
    text = repr(t)
    assert text.startswith("tensor([[1., 2.],") and text.endswith("dtype=float32, device=cpu)")
    print(t)
    assert "3., 4." in capsys.readouterr().out


def test_operators(engine):
    a = de.array([1.0, 2.0, 3.0], engine=engine)
    b = de.array([4.0, 5.0, 6.0], engine=engine)
    np.testing.assert_array_equal((a + b).asnumpy(), [5, 7, 9])
    np.testing.assert_array_equal((a - b).asnumpy(), [-3, -3, -3])
    np.testing.assert_array_equal((a * b).asnumpy(), [4, 10, 18])
    np.testing.assert_array_equal((a * 2).asnumpy(), [2, 4, 6])
    np.testing.assert_array_equal((2 * a).asnumpy(), [2, 4, 6])
    np.testing.assert_array_equal((a + 1).asnumpy(), [2, 3, 4])
    np.testing.assert_array_equal((1 + a).asnumpy(), [2, 3, 4])
    np.testing.assert_array_equal((a - 1).asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal((10 - a).asnumpy(), [9, 8, 7])
    np.testing.assert_array_equal((a / 2).asnumpy(), [0.5, 1, 1.5])
    np.testing.assert_array_equal((-a).asnumpy(), [-1, -2, -3])
    np.testing.assert_array_equal((a * np.float32(3)).asnumpy(), [3, 6, 9])


def test_in_place_operators_keep_the_object(engine):
    a = de.array([1.0, 2.0], engine=engine)
    b = a
    a += 1
    a *= 3
    a -= de.array([1.0, 1.0], engine=engine)
    a /= 2
    assert a is b
    np.testing.assert_array_equal(a.asnumpy(), [2.5, 4.0])


def test_broadcast_of_a_suffix(engine):
    m = de.array(np.ones((2, 3), np.float32), engine=engine)
    row = de.array([1.0, 2.0, 3.0], engine=engine)
    np.testing.assert_array_equal((m + row).asnumpy(), [[2, 3, 4], [2, 3, 4]])
    with pytest.raises(ValueError, match="broadcast"):
        m + de.ones(2, engine=engine)


def test_matmul_operator(engine):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose((de.array(a, engine=engine) @ de.array(b, engine=engine)).asnumpy(), a @ b)
    with pytest.raises(ValueError):
        de.array(a, engine=engine) @ de.array(a, engine=engine)


def test_mixing_arrays_and_tensors_is_an_error(engine):
    t = de.ones(3, engine=engine)
    with pytest.raises(TypeError):
        t + np.ones(3, np.float32)
    with pytest.raises(TypeError):
        np.ones(3, np.float32) + t
    with pytest.raises(TypeError):
        t + "1"


def test_dtype_mismatch_is_a_type_error(engine):
    with pytest.raises(TypeError, match="dtypes differ"):
        de.ones(2, engine=engine) + de.ones(2, dtype="float64", engine=engine)
    with pytest.raises(TypeError, match="labels must be int32"):
        de.softmax_cross_entropy(de.ones((2, 3), engine=engine), de.ones(2, engine=engine))


def test_tensors_of_another_engine_are_rejected(engine):
    other = de.Engine(cpu_threads=1)
    with pytest.raises(ValueError, match="different engines"):
        de.zeros(2, engine=engine) + de.zeros(2, engine=other)


def test_reshape_astype_copy_to(engine):
    t = de.array(np.arange(6, dtype=np.float32), engine=engine)
    assert t.reshape(2, 3).shape == (2, 3) and t.reshape((3, 2)).shape == (3, 2)
    with pytest.raises(ValueError):
        t.reshape(4, 2)
    d = t.astype("float64")
    assert d.dtype == "float64"
    np.testing.assert_array_equal(d.asnumpy(), np.arange(6))
    engine.add_emulated_device(0)
    on_device = t.copy_to("emulated:0")
    assert on_device.device == "emulated:0"
    np.testing.assert_array_equal((on_device * 2).asnumpy(), np.arange(6) * 2)
    np.testing.assert_array_equal(de.array([1.0, 2.0], device="emulated:0", engine=engine).asnumpy(), [1, 2])


def test_unknown_device_is_a_value_error(engine):
    with pytest.raises(ValueError):
        de.zeros(2, device="emulated:5", engine=engine)
    with pytest.raises(ValueError):
        de.zeros(2, device="cpu:1", engine=engine)


# NumPy 2.1 and later ask for DLPack 1.0 capsules, which may be writable.
NUMPY_WRITES_DLPACK = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def test_dlpack_export_shares_memory(engine):
    t = de.zeros(4, engine=engine)
    de.add(t, 3.0, out=t)
    view = np.from_dlpack(t)  # waits for the add
    np.testing.assert_array_equal(view, [3, 3, 3, 3])
    de.add(t, 1.0, out=t)
    t.wait_to_read()
    np.testing.assert_array_equal(view, [4, 4, 4, 4])  # the same memory
    assert t.__dlpack_device__() == (1, 0)
    if NUMPY_WRITES_DLPACK:
        view[0] = 42.0
        assert t.asnumpy()[0] == 42.0
    del t  # the view keeps the storage alive
    assert view[1] == 4.0


def test_dlpack_copy_and_devices(engine):
    t = de.ones(3, engine=engine)

    class Holder:
        def __init__(self, capsule):
            self.capsule = capsule

        def __dlpack__(self, **kwargs):
            return self.capsule

        def __dlpack_device__(self):
            return (1, 0)

    versioned = {"max_version": (1, 0)} if NUMPY_WRITES_DLPACK else {}
    copy = np.from_dlpack(Holder(t.__dlpack__(copy=True, **versioned)))
    de.add(t, 1.0, out=t)
    t.wait_to_read()
    np.testing.assert_array_equal(copy, [1, 1, 1])
    engine.add_emulated_device(0)
    with pytest.raises(BufferError):
        t.copy_to("emulated:0").__dlpack__()


def test_from_dlpack_imports_a_copy(engine):
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = de.from_dlpack(a, engine=engine)
    assert t.dtype == "float64" and t.shape == (2, 3)
    a[0, 0] = 100
    np.testing.assert_array_equal(t.asnumpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError):
        de.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError):
        de.from_dlpack(np.arange(3, dtype=np.int8))
    with pytest.raises(ValueError, match="strided"):
        de.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3).T)
    round_trip = de.from_dlpack(de.array([1.0, 2.0], engine=engine), engine=engine)
    np.testing.assert_array_equal(round_trip.asnumpy(), [1, 2])


def test_array_protocol_refuses_copy_false(engine):
    with pytest.raises(ValueError, match="copy"):
        de.ones(2, engine=engine).__array__(copy=False)


def test_op_errors_reach_the_blockers_of_results(engine):
    logits = de.zeros((2, 3), engine=engine)
    labels = de.array(np.array([0, 7], np.int32), engine=engine)  # 7 is out of range
    loss = de.softmax_cross_entropy(logits, labels)
    with pytest.raises(IndexError, match="label 7"):
        loss.item()
