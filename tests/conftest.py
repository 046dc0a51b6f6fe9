"""Shared helpers for every operator's tests: dtypes, array makers, memory orders, fuzz settings."""
import os

import numpy as np
import pytest

from pooling import _caches
from pooling._dtypes import LEGACY_BFLOAT16

# The tests run with the same cache sizes on every machine (the speed thresholds in pooling._tuning
# are written in them), so that each strategy and switch a test expects is the one chosen; the
# `caches` fixture moves them, and tests/test_tuning.py checks what this machine reports.
_caches.CACHES = _caches.DEFAULT

try:
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # ml_dtypes is optional: ONNX's legacy structured dtype still works
    ml_dtypes = None
    BFLOAT16 = LEGACY_BFLOAT16

# Every dtype MaxPool supports in library mode, by SPEC name.
POOL_DTYPES = {
    "float16": np.dtype(np.float16),
    "bfloat16": BFLOAT16,
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    # library mode only (no MaxPool version has them): docs/behaviour.md
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
}
FLOAT_KINDS = ("float16", "bfloat16", "float32", "float64")
INT_KINDS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def for_kind(attrs, kind):
    """MaxPool attributes for `kind`: bool has no activation (docs/behaviour.md), so a case's
    activation is left out for it, and its geometry still tested."""
    if kind != "bool":
        return attrs
    return {name: value for name, value in attrs.items() if not name.startswith("activation")}


def to_dtype(values, kind):
    """float64 `values` in the dtype of `kind` (bfloat16 rounded to nearest even, NaN kept)."""
    values = np.asarray(values, dtype=np.float64)
    if kind == "bfloat16":
        return _bfloat16_bits(values).view(BFLOAT16)
    return values.astype(POOL_DTYPES[kind])


def _bfloat16_bits(values):
    """bfloat16 bit patterns of float64 `values`: via float32, round to nearest even, NaN kept quiet."""
    with np.errstate(over="ignore", invalid="ignore"):
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded[nan] = (bits[nan] >> 16) | 0x0040
    return rounded.astype(np.uint16)


def as_float64(x):
    """float64 values of any MaxPool dtype (either bfloat16 dtype included), exact, NaN kept."""
    x = np.asarray(x)
    if x.dtype.itemsize == 2 and (x.dtype.fields is not None or x.dtype.name == "bfloat16"):
        bits = np.ascontiguousarray(x).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def make_array(rng, shape, kind, special=True):
    """Random data of `kind` with many ties; floats also get NaN, -0.0 and +-inf when `special`;
    integers wider than a byte take values near both ends of their range and around 0 (the sign
    bit's both sides), and bool is a quarter True."""
    if kind == "bool":
        return rng.random(shape) < 0.25
    if kind in ("int8", "uint8"):
        info = np.iinfo(kind)
        return rng.integers(info.min, int(info.max) + 1, size=shape).astype(kind)
    if kind in INT_KINDS:
        info = np.iinfo(kind)
        middle = (int(info.min) + int(info.max) + 1) // 2  # 0, or the unsigned type's sign-bit flip
        near = np.array([info.min, info.min + 1, middle - 1, middle, middle + 1, info.max - 1, info.max],
                        dtype=object)
        picks = near[rng.integers(0, near.size, size=shape)]
        step = rng.integers(-3, 4, size=shape)
        values = np.clip(picks + step, int(info.min), int(info.max))
        return values.astype(kind)
    values = rng.integers(-4, 5, size=shape).astype(np.float64)
    if special:
        u = rng.random(shape)
        values[u < 0.04] = np.nan
        values[(u >= 0.04) & (u < 0.12)] = -0.0
        values[(u >= 0.12) & (u < 0.14)] = -np.inf
        values[(u >= 0.14) & (u < 0.15)] = np.inf
    out = to_dtype(values, kind)
    if special and kind != "bfloat16":
        # NaNs with other payloads and the sign bit set, so "its exact bits" is tested.
        bits = out.view(np.uint16 if out.itemsize == 2 else np.uint32 if out.itemsize == 4 else np.uint64)
        nan = np.isnan(values)
        bits[nan & (rng.random(shape) < 0.5)] |= np.array(1, bits.dtype) << (bits.dtype.itemsize * 8 - 1)
    return out


def assert_same(actual, expected):
    """Same shape, same dtype, same bytes (NaN payloads and -0.0 included)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.tobytes() != expected.tobytes():
        a = actual.view(np.uint8).reshape(actual.shape + (-1,))
        e = expected.view(np.uint8).reshape(expected.shape + (-1,))
        bad = np.argwhere((a != e).any(axis=-1))
        raise AssertionError(
            f"{len(bad)} of {actual.size} elements differ; first at {tuple(bad[0])}: "
            f"{actual[tuple(bad[0])]!r} != {expected[tuple(bad[0])]!r}"
        )


def each_position(base, special, **attrs):
    """(x, want) for each position of `base` in turn holding `special`: x a fresh array (as a copy of
    base would be), want the twin's MaxPool of it.  The twin pools every x in one call, as the images
    of one batch (each image is pooled on its own, so its result is the one a call of its own
    gives): a Python loop of twin calls cost most of the kernel tests' time, above all under
    emulation and the sanitizers."""
    from pooling import reference

    xs = np.repeat(base[None], base.size, axis=0)
    xs.reshape(base.size, -1)[np.arange(base.size), np.arange(base.size)] = special
    want = reference.max_pool(xs.reshape((-1,) + base.shape[1:]), **attrs)
    want = want.reshape((base.size, base.shape[0]) + want.shape[1:])
    for i in range(base.size):
        yield xs[i].copy(), want[i]


def full_attr(value, length=None, default=None):
    """A valid sequence attribute in any form the API accepts (None, an int, a sequence, an array)
    as the tuple of `length` ints it stands for (length None: as many as given)."""
    if value is None:
        return (default,) * length
    values = tuple(int(v) for v in np.asarray(value).reshape(-1).tolist())
    return values * length if len(values) == 1 and length is not None else values


def unpool_output_shape(x_shape, attrs):
    """max_unpool's output shape for keyword `attrs` straight from SPEC 2, or None where an inferred
    dimension would be < 1 (a ValueError)."""
    if attrs.get("output_shape") is not None:
        return full_attr(attrs["output_shape"], len(x_shape), 0)
    nhwc = attrs.get("layout") == "NHWC"
    spatial = x_shape[1:-1] if nhwc else x_shape[2:]
    n = len(spatial)
    kernel, strides = full_attr(attrs["kernel_shape"], n, 1), full_attr(attrs.get("strides"), n, 1)
    pads = full_attr(attrs.get("pads"), 2 * n, 0)
    out = tuple((spatial[i] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i] for i in range(n))
    if n == 0 or min(out) < 1:
        return None
    return (x_shape[0],) + out + (x_shape[-1],) if nhwc else tuple(x_shape[:2]) + out


def memory_orders(x):
    """(name, array) pairs holding x's values in other memory layouts, none C-contiguous native."""
    yield "C", x
    yield "readonly", _readonly(x)
    yield "fortran", np.asfortranarray(x)
    big = np.zeros(tuple(2 * s + 1 for s in x.shape), dtype=x.dtype)
    view = big[tuple(slice(1, None, 2) for _ in x.shape)]
    view[...] = x
    yield "strided", view
    flip = tuple(slice(None, None, -1) for _ in x.shape)
    yield "reversed", np.ascontiguousarray(x[flip])[flip]  # every stride negative
    if x.dtype.itemsize > 1 and not x.dtype.hasobject:
        yield "unaligned", unaligned(x)
    if x.dtype.fields is None and x.dtype.itemsize > 1 and x.dtype.name != "bfloat16":
        yield "byteswapped", x.astype(x.dtype.newbyteorder("S"))
    if x.dtype == np.float64:  # np.asarray of Python floats gives float64 back
        yield "list", x.tolist()


def unaligned(x):
    """A C-contiguous copy of x one byte off its dtype's alignment."""
    buf = np.zeros(x.nbytes + 1, np.uint8)
    u = np.frombuffer(buf[1:].data, dtype=x.dtype).reshape(x.shape)
    u[...] = x
    return u


def _readonly(x):
    x = x.copy()
    x.flags.writeable = False
    return x


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# Col2Im (SPEC 3) takes every numeric dtype and bool.
ALL_DTYPES = dict(
    POOL_DTYPES,
    bool=np.dtype(np.bool_),
    int16=np.dtype(np.int16),
    int32=np.dtype(np.int32),
    int64=np.dtype(np.int64),
    uint16=np.dtype(np.uint16),
    uint32=np.dtype(np.uint32),
    uint64=np.dtype(np.uint64),
    complex64=np.dtype(np.complex64),
    complex128=np.dtype(np.complex128),
)


def make_any_array(rng, shape, kind, special=True):
    """make_array for every kind of ALL_DTYPES.

    Integers span their whole range (so sums wrap around), bool is random, and
    complex parts come from make_array's float data (NaN, -0.0, inf included).
    """
    if kind in POOL_DTYPES:
        return make_array(rng, shape, kind, special)
    dtype = ALL_DTYPES[kind]
    if kind == "bool":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    part = "float32" if dtype == np.complex64 else "float64"
    out = np.empty(shape, dtype)
    out.real = make_array(rng, shape, part, special)
    out.imag = make_array(rng, shape, part, special)
    return out


def _nan_mask(a):
    """Where a float array (any of ALL_DTYPES' float or complex kinds) holds NaN, per scalar part."""
    if a.dtype.itemsize == 2 and a.dtype.kind != "f":  # bfloat16, either spelling
        return (a.view(np.uint16) & 0x7FFF) > 0x7F80
    if a.dtype.kind == "c":
        a = a.view(a.real.dtype)
    return np.isnan(a)


def assert_same_or_nan(actual, expected):
    """assert_same, except that any NaN equals any NaN.

    Which NaN an addition of two NaNs returns is up to the instruction the
    compiler picked, so sums are compared by value where NaNs meet.
    """
    actual, expected = np.array(actual), np.array(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.dtype.kind in "fcV" or actual.dtype.name == "bfloat16":
        pa, pe = _parts(actual), _parts(expected)
        nan_a, nan_e = _nan_mask(actual), _nan_mask(expected)
        assert nan_a.shape == nan_e.shape and (nan_a == nan_e).all(), "NaN at different places"
        pa[nan_a] = 0
        pe[nan_e] = 0
    assert_same(actual, expected)


def _parts(a):
    """A writeable view of a's scalar parts, shaped like _nan_mask(a)."""
    if a.dtype.itemsize == 2:
        return a.view(np.uint16)
    return a.view(a.real.dtype) if a.dtype.kind == "c" else a


def to_nhwc(x):
    """An NCHW array's channels-last copy."""
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


# -- torch's max_pool{1,2,3}d (index formats, max_pool_grad) ----------------------------------------

def tie_free(rng, shape, dtype):
    """Distinct values (a permutation of 0..size-1): every window has one winner, so indices agree."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)


# (rank, torch max_pool{rank}d arguments): overlapping and disjoint windows, pads, dilation with
# ceil_mode, per-axis kernels and strides.
TORCH_POOL_CASES = [
    (1, dict(kernel_size=3, stride=1, padding=1)), (1, dict(kernel_size=3, stride=2)),
    (1, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=3, stride=1, padding=1)), (2, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=2, stride=1, dilation=2, ceil_mode=True)),
    (3, dict(kernel_size=3, stride=1, padding=1)), (3, dict(kernel_size=3, stride=2, padding=1)),
    (3, dict(kernel_size=(1, 3, 2), stride=(1, 2, 2))),
]


def torch_pool_attrs(args, rank):
    """max_pool's attributes for torch's max_pool{rank}d arguments."""
    def per_axis(v):
        return (v,) * rank if isinstance(v, int) else tuple(v)
    return dict(kernel_shape=per_axis(args["kernel_size"]), strides=per_axis(args["stride"]),
                pads=per_axis(args.get("padding", 0)) * 2, dilations=per_axis(args.get("dilation", 1)),
                ceil_mode=args.get("ceil_mode", False))


# -- fuzzing (hypothesis) -------------------------------------------------------------------------
# POOLING_FUZZ_EXAMPLES=N multiplies every fuzz test's example count by N;
# `pytest --slow` is N = SLOW_FACTOR.  The default run is derandomized (the same
# examples every time); a longer campaign draws fresh ones.

SLOW_FACTOR = 20
_fuzz = {"factor": None}


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help=f"long fuzz campaign: {SLOW_FACTOR}x the examples of every hypothesis "
                          "test (POOLING_FUZZ_EXAMPLES=N sets the factor)")


def pytest_configure(config):
    _fuzz["factor"] = SLOW_FACTOR if config.getoption("--slow") else None


def fuzz_factor():
    """How many times its default number of examples each fuzz test runs."""
    value = os.environ.get("POOLING_FUZZ_EXAMPLES")
    if value:
        factor = int(value)
        if factor < 1:
            raise ValueError(f"POOLING_FUZZ_EXAMPLES must be a positive integer, got {value!r}")
        return factor
    return _fuzz["factor"] or 1


def fuzz_settings(max_examples):
    """hypothesis settings for a fuzz test: `max_examples` times fuzz_factor(), no deadline."""
    from hypothesis import HealthCheck, settings

    factor = fuzz_factor()
    return settings(max_examples=max_examples * factor, deadline=None, derandomize=factor == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture
def caches(monkeypatch):
    """set(l1d=, l2=, llc=): the cache sizes the speed thresholds read, for one test; the plans and
    launches made with other sizes are forgotten, before and after."""
    from pooling import _maxpool_strategies, maxunpool

    def forget():
        _maxpool_strategies.launch.cache_clear()
        maxunpool._plan.cache_clear()

    def set_sizes(l1d=_caches.DEFAULT.l1d, l2=_caches.DEFAULT.l2, llc=_caches.DEFAULT.llc):
        monkeypatch.setattr(_caches, "CACHES", _caches.Caches(l1d, l2, llc, 0, "test"))
        forget()

    yield set_sizes
    forget()
