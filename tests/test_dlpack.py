"""Framework arrays in, zero-copy: every operator reads an object with ``__dlpack__`` (a torch CPU tensor, a
JAX CPU array) as a view of its memory, gives the numpy path's results, and never writes it."""
import numpy as np
import pytest

import pooling
from pooling._dtypes import as_array

OPERATORS = ("MaxPool", "MaxUnpool", "Col2Im")


class DLPackOnly:
    """Only the DLPack protocol, nothing numpy.asarray understands: read through DLPack or not at all."""

    def __init__(self, array, device=(1, 0)):
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


def _pool_calls(x, cols=None):
    """(name, result) of each operator on `x`, an (N, C, H, W) array or tensor of float values, and of
    Col2Im on `cols` (default: `x` as (N, C * H, W) columns of 1-element blocks)."""
    cols = x.reshape(x.shape[0], -1, x.shape[-1]) if cols is None else cols
    y, i = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True)
    return {
        "max_pool": y,
        "indices": i,
        "max_pool NHWC": pooling.max_pool(x, 2, strides=2, layout="NHWC"),
        "col2im": pooling.col2im(cols, (8,), (1,)),
    }


def test_a_dlpack_only_object_is_read_through_dlpack():
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8))
    wrapped = DLPackOnly(x)
    view = as_array("MaxPool", "x", wrapped)
    assert np.shares_memory(view, x)
    cols = x.reshape(2, -1, 8)
    for name, got in _pool_calls(wrapped, DLPackOnly(cols)).items():
        assert np.array_equal(got, _pool_calls(x)[name]), name


class LegacyDLPack(DLPackOnly):
    """A producer from before DLPack 1.0 (torch < 2.3): __dlpack__ takes only a stream."""

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__(stream=stream)


def test_a_legacy_producer_is_read_without_a_copy():
    x = np.arange(24.0).reshape(2, 3, 4)
    view = as_array("MaxPool", "x", LegacyDLPack(x))
    assert np.shares_memory(view, x)
    assert np.array_equal(pooling.max_pool(LegacyDLPack(x), 2), pooling.max_pool(x, 2))


def test_an_object_on_another_device_is_a_type_error():
    wrapped = DLPackOnly(np.ones((1, 1, 4)), device=(2, 0))  # kDLCUDA
    with pytest.raises(TypeError, match=r"MaxPool: x is on DLPack device type 2.*CPU memory only"):
        pooling.max_pool(wrapped, 2)
    with pytest.raises(TypeError, match=r"MaxUnpool: indices is on DLPack device type 2"):
        pooling.max_unpool(np.ones((1, 1, 2)), DLPackOnly(np.zeros((1, 1, 2), np.int64), (2, 0)), 2)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def jnp():
    return pytest.importorskip("jax.numpy")


class TestTorch:

    @pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8"])
    def test_as_array_is_a_view_of_the_tensor(self, torch, dtype):
        t = torch.arange(24).reshape(2, 3, 4).to(getattr(torch, dtype))
        arr = as_array("MaxPool", "x", t)
        assert arr.dtype == np.dtype(dtype)
        assert arr.ctypes.data == t.data_ptr() and np.shares_memory(arr, t.numpy())
        assert np.array_equal(arr, t.numpy())

    def test_a_lazily_negated_tensor_is_read_negated(self, torch):
        """torch's negative bit (the imaginary part of a conjugate view) is not in DLPack's export:
        the values read must be the tensor's, not its storage's."""
        t = torch.tensor([[[[1 + 2j, 3 - 4j], [5 + 1j, -7j]]]]).conj().imag
        assert t.is_neg()
        assert np.array_equal(as_array("MaxPool", "x", t), t.resolve_neg().numpy())
        assert pooling.max_pool(t, 2).item() == 7.0

    def test_strided_tensors_are_viewed_with_their_strides(self, torch):
        t = torch.randn(2, 3, 5, 6).to(memory_format=torch.channels_last)
        for view in (t, t.permute(0, 2, 3, 1), t[:, :, ::2, 1:]):
            arr = as_array("MaxPool", "x", view)
            assert np.shares_memory(arr, t.permute(0, 2, 3, 1).numpy())
            assert arr.strides == tuple(s * t.element_size() for s in view.stride())
            assert np.array_equal(arr, view.numpy())

    @pytest.mark.parametrize("memory_format", ["contiguous_format", "channels_last"])
    def test_every_operator_gives_the_numpy_results(self, torch, memory_format):
        t = torch.randn(2, 3, 8, 8, dtype=torch.float64).to(
            memory_format=getattr(torch, memory_format))
        before = t.clone()
        got, want = _pool_calls(t), _pool_calls(t.numpy())
        for name in want:
            assert np.array_equal(got[name], want[name]), name
            assert type(got[name]) is np.ndarray
        y, i = got["max_pool"], got["indices"]
        ty, ti = torch.from_numpy(y), torch.from_numpy(i)
        assert np.array_equal(pooling.max_unpool(ty, ti, 3, strides=2, pads=1, output_shape=t.shape),
                              pooling.max_unpool(y, i, 3, strides=2, pads=1, output_shape=t.shape))
        assert torch.equal(t, before)  # never written

    def test_a_tensor_that_requires_grad_is_a_type_error(self, torch):
        t = torch.ones(1, 1, 4, 4, requires_grad=True)
        with pytest.raises(TypeError, match=r"MaxPool: x cannot be read through DLPack.*detach"):
            pooling.max_pool(t, 2)
        assert pooling.max_pool(t.detach(), 2).shape == (1, 1, 3, 3)

    def test_a_dtype_numpy_lacks_is_a_type_error(self, torch):
        with pytest.raises(TypeError, match=r"Col2Im: x cannot be read through DLPack"):
            pooling.col2im(torch.ones(1, 4, 9, dtype=torch.bfloat16), (4, 4), (2, 2))

    def test_a_zero_dim_tensor_is_a_type_error(self, torch):
        with pytest.raises(TypeError, match=r"MaxPool: x must be an array of numbers"):
            pooling.max_pool(torch.tensor(1.0), 1)


class TestJax:

    def test_a_jax_array_is_read_without_a_copy(self, jnp):
        a = jnp.arange(2 * 3 * 8 * 8, dtype=jnp.float32).reshape(2, 3, 8, 8) % 7
        arr = as_array("MaxPool", "x", a)
        assert arr.ctypes.data == a.unsafe_buffer_pointer()
        want = _pool_calls(np.asarray(a))
        for name, got in _pool_calls(a).items():
            assert np.array_equal(got, want[name]), name

    def test_jax_indices_unpool(self, jnp):
        x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
        y, i = pooling.max_pool(x, 2, strides=2, return_indices=True)
        got = pooling.max_unpool(jnp.asarray(y), jnp.asarray(i), 2, strides=2)
        assert np.array_equal(got, pooling.max_unpool(y, i, 2, strides=2))
