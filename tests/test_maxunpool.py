"""MaxUnpool (SPEC 2): kernel vs reference, round trips, threads, versions, errors, out=."""
import itertools
import re

import numpy as np
import pytest
from conftest import BFLOAT16, POOL_DTYPES, assert_same, make_array, memory_orders, to_dtype

import pooling
from pooling import reference

# Spatial shapes of x with attributes; the inferred output is (D-1)*s - pads + k per axis.
CASES = {
    1: [((7,), dict(kernel_shape=(3,), strides=(2,))),
        ((5,), dict(kernel_shape=(2,), strides=(3,), pads=(1, 0)))],
    2: [((4, 5), dict(kernel_shape=(2, 2), strides=(2, 2))),
        ((3, 4), dict(kernel_shape=(3, 2), strides=(2, 1), pads=(1, 0, 0, 1)))],
    3: [((2, 3, 4), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
        ((3, 2, 3), dict(kernel_shape=(3, 1, 2), strides=(1, 2, 2), pads=(0, 0, 1, 1, 0, 0)))],
    4: [((2, 3, 2, 3), dict(kernel_shape=(2, 2, 2, 2), strides=(2, 2, 2, 2)))],
}
MODES = ("local", "duplicates", "cross")


def unpool_indices(rng, x_shape, out_shape, mode):
    """int64 indices for x_shape into out_shape.

    local: distinct positions inside each element's own (n, c) plane, as MaxPool
    makes them; duplicates: inside the own plane, many repeats; cross: anywhere
    in the output, repeats included (forces the ordered serial pass).
    """
    planes = x_shape[0] * x_shape[1]
    per_in = int(np.prod(x_shape[2:]))
    per_out = int(np.prod(out_shape[2:]))
    if mode == "cross":
        return rng.integers(0, planes * per_out, size=x_shape, dtype=np.int64)
    if mode == "local" and per_in <= per_out:
        offsets = np.stack([rng.permutation(per_out)[:per_in] for _ in range(planes)])
    else:
        offsets = rng.integers(0, max(2, per_out // 3) if mode == "duplicates" else per_out,
                               size=(planes, per_in)) % per_out
    base = np.arange(planes, dtype=np.int64)[:, None] * per_out
    return (base + offsets).reshape(x_shape)


def test_inferred_shape_formula():
    assert pooling.max_unpool_output_shape((2, 3, 4, 5), (2, 3), strides=(2, 1)) == (2, 3, 8, 7)
    # (D - 1)*s - (pb + pe) + k per axis
    assert pooling.max_unpool_output_shape((1, 1, 5, 6), 3, strides=2, pads=(1, 0, 1, 2)) == (1, 1, 9, 11)
    assert pooling.max_unpool_output_shape((1, 1, 9), 2, output_shape=[1, 1, 4], pads=(5, 5)) == (1, 1, 4)


@pytest.mark.parametrize("kind", POOL_DTYPES)
@pytest.mark.parametrize("rank", sorted(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_matches_reference(rng, kind, rank, mode):
    for spatial, attrs in CASES[rank]:
        x = make_array(rng, (2, 3) + spatial, kind)
        for output_shape in (None, "bigger"):
            out_shape = pooling.max_unpool_output_shape(x.shape, **attrs)
            if output_shape == "bigger":
                output_shape = out_shape[:2] + tuple(o + 1 for o in out_shape[2:])
                out_shape = output_shape
            idx = unpool_indices(rng, x.shape, out_shape, mode)
            got = pooling.max_unpool(x, idx, **attrs, output_shape=output_shape)
            want = reference.max_unpool(x, idx, **attrs, output_shape=output_shape)
            assert got.dtype == POOL_DTYPES[kind]
            assert_same(got, want)


def test_duplicates_last_in_row_major_order_wins():
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 2, 2)
    # Plane 0: every element at 0; plane 1: positions 5 twice and 6 twice.
    idx = np.array([0, 0, 0, 0, 5, 6, 6, 5]).reshape(1, 2, 2, 2)
    y = pooling.max_unpool(x, idx, 2, strides=2, output_shape=(1, 2, 2, 2))
    assert y.reshape(-1).tolist() == [4, 0, 0, 0, 0, 8, 7, 0]
    # Across planes (serial pass): plane 1 writes last.
    idx = np.array([1, 2, 3, 0, 0, 2, 1, 3]).reshape(1, 2, 2, 2)
    y = pooling.max_unpool(x, idx, 2, strides=2, output_shape=(1, 2, 2, 2))
    assert y.reshape(-1).tolist() == [5, 7, 6, 8, 0, 0, 0, 0]


def test_plane_boundaries():
    # An index one past its own plane is a write into the next plane, not a local one...
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 1, 2)
    y = pooling.max_unpool(x, np.array([0, 2, 3, 3]).reshape(1, 2, 1, 2), 1)
    assert y.reshape(-1).tolist() == [1, 0, 2, 4]
    # ... one before it too, and one past the last plane is out of range.
    y = pooling.max_unpool(x, np.array([0, 1, 1, 3]).reshape(1, 2, 1, 2), 1)
    assert y.reshape(-1).tolist() == [1, 3, 0, 4]
    with pytest.raises(ValueError, match=r"indices\[0, 1, 0, 1\] = 4 is outside \[0, 4\)"):
        pooling.max_unpool(x, np.array([0, 1, 2, 4]).reshape(1, 2, 1, 2), 1)


def test_only_bits_move(rng):
    # NaN payloads, -0.0, infinities and bfloat16 come back bit for bit; the fill is +0.0.
    for kind in ("float16", "bfloat16", "float32", "float64"):
        x = make_array(rng, (2, 2, 6, 6), kind)
        idx = unpool_indices(rng, x.shape, (2, 2, 12, 12), "local")
        y = pooling.max_unpool(x, idx, 2, strides=2)
        bits = f"u{x.dtype.itemsize}"
        assert_same(y.reshape(-1)[idx.reshape(-1)].view(bits), x.reshape(-1).view(bits))
        mask = np.ones(y.size, bool)
        mask[idx.reshape(-1)] = False
        assert not y.reshape(-1).view(bits)[mask].any()


@pytest.mark.parametrize("kind", POOL_DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_round_trip_from_max_pool(rng, kind, rank):
    shapes = {1: (3, 4, 11), 2: (2, 3, 9, 7), 3: (2, 2, 5, 7, 3)}
    x = make_array(rng, shapes[rank], kind)
    bits = f"u{x.dtype.itemsize}"
    for attrs in (dict(kernel_shape=2, strides=2), dict(kernel_shape=3, strides=2, pads=1),
                  dict(kernel_shape=2, strides=2, ceil_mode=True),
                  dict(kernel_shape=3, strides=2, pads=1, ceil_mode=True)):
        y, idx = pooling.max_pool(x, **attrs, return_indices=True)
        unpool_attrs = {k: v for k, v in attrs.items() if k != "ceil_mode"}
        back = pooling.max_unpool(y, idx, **unpool_attrs, output_shape=x.shape)
        # Every pooled value at its origin, zeros elsewhere.
        want = np.zeros(x.size, dtype=bits)
        want[idx.reshape(-1)] = x.reshape(-1).view(bits)[idx.reshape(-1)]
        assert_same(back.reshape(-1).view(bits), want)
        assert back.dtype == x.dtype and back.shape == x.shape


def window_indices(rng, planes, in_hw, out_hw, relative=False):
    """int64 indices of a 2x2 stride-2 MaxPool: each element at a random corner of its own window."""
    (h, w), (H, W) = in_hw, out_hw
    r, c = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    corner = rng.integers(0, 4, size=(planes, h, w))
    offsets = (2 * r + corner // 2) * W + 2 * c + corner % 2
    base = 0 if relative else np.arange(planes, dtype=np.int64)[:, None, None] * (H * W)
    return (base + offsets).astype(np.int64)


# Builds of the kernels this CPU runs: the windows (include/pooling_unpool.h) go in vectors in the SIMD ones,
# a pair at a time in the baseline one (which max_unpool does not ask for them).
BUILDS = ["pooling._core" if level == "baseline" else f"pooling._core_{level}"
          for level in __import__("pooling._dispatch", fromlist=["available"]).available]


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("in_hw, out_hw", [((1, 1), (2, 2)), ((3, 5), (6, 10)), ((4, 9), (8, 18)),
                                           ((5, 4), (13, 12)), ((2, 7), (4, 16)), ((6, 16), (12, 32))])
@pytest.mark.parametrize("mode", ["windows", "one outside", "other plane", "duplicate", "out of range"])
def test_windows_written_whole_as_the_scatter(rng, build, in_hw, out_hw, mode):
    """2x2 stride-2 planes of 32-bit elements are written window by window (values and zeros side by
    side, rows of any length, rows and columns beyond the windows zeroed), bit for bit the
    reference's scatter over every thread count and both index formats read in place; any index
    not in its own window (in its plane or not, a duplicate) has the whole call done the general
    way, the last write winning, and the first index out of range is reported."""
    import importlib
    core = importlib.import_module(build)
    planes = 5
    for relative in (0, 1):
        idx = window_indices(rng, planes, in_hw, out_hw, relative=bool(relative))
        flat = idx.reshape(-1)
        j = rng.integers(0, flat.size)
        size = planes * out_hw[0] * out_hw[1]
        if mode == "one outside":      # to the plane's last element, outside every window
            flat[j] = (0 if relative else j // (in_hw[0] * in_hw[1]) * (size // planes)) + size // planes - 1
        elif mode == "other plane" and not relative:
            flat[j] = (flat[j] + size // planes) % size
        elif mode == "duplicate":
            flat[j] = flat[(j + 1) % flat.size]
        elif mode == "out of range":
            flat[j] = size if not relative else size // planes
        x = rng.standard_normal(idx.size).astype(np.float32)
        x[::7] = -0.0
        want = np.zeros(size, np.float32)
        absolute = flat + (np.arange(flat.size) // (in_hw[0] * in_hw[1]) * (size // planes) if relative else 0)
        for i, v in zip(absolute, x):
            if 0 <= i < size:
                want[i] = v
        for n_threads in (1, 2, 3):
            results = []
            for windows in (None, in_hw + out_hw + (0,), in_hw + out_hw + (1,)):
                y = np.full(size, np.nan, np.float32).view(np.uint32)
                bad = core.max_unpool(x.view(np.uint32), flat, y, planes, True, False, n_threads, relative, 1,
                                      windows)
                results.append((bad, y.copy()))
            assert results[0][0] == results[1][0] == results[2][0] == (j if mode == "out of range" else -1)
            if mode != "out of range":
                assert_same(results[1][1].view(np.float32), want)
                assert_same(results[0][1], results[1][1])
                assert_same(results[2][1], results[1][1])


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("in_hw, out_hw", [((3, 40), (6, 80)), ((2, 56), (4, 112)), ((3, 37), (6, 76)),
                                           ((2, 24), (5, 50))])
def test_windows_at_every_alignment(rng, build, in_hw, out_hw):
    """Streamed windows write only whole 64-byte lines with non-temporal stores, the rest of each
    row as usual; plain ones store vectors from a 32-byte boundary, the pairs before it one by one:
    wherever y starts (every 8-byte offset in a line, and 4 where neither lines up) and whatever
    its rows' length, the result is the scatter's, for every thread count."""
    import importlib
    core = importlib.import_module(build)
    planes = 3
    idx = window_indices(rng, planes, in_hw, out_hw, relative=False)
    x = rng.standard_normal(idx.size).astype(np.float32)
    size = planes * out_hw[0] * out_hw[1]
    want = np.zeros(size, np.float32)
    want[idx.reshape(-1)] = x
    buffer = np.empty(size + 32, np.uint32)
    first = (-buffer.ctypes.data % 64) // 4        # the buffer's first 64-byte line boundary
    for offset in range(0, 64, 4):
        y = buffer[first + offset // 4:first + offset // 4 + size]
        for n_threads, stream in itertools.product((1, 2, 3), (0, 1)):
            y[:] = 0x7FC00000  # NaN
            bad = core.max_unpool(x.view(np.uint32), idx.reshape(-1), y, planes, True, False, n_threads, 0, 1,
                                  in_hw + out_hw + (stream,))
            assert bad == -1
            assert_same(y.view(np.float32), want)


@pytest.mark.parametrize("build", BUILDS)
def test_windows_that_do_not_fit_the_arrays_are_refused(build):
    """Kernel contract: windows that do not describe the parts (a plane of x or y of another size,
    an odd or short output row, too few output rows, NHWC pixels) return -2 and write nothing."""
    import importlib
    core = importlib.import_module(build)
    x, idx = np.ones(2 * 3 * 4, np.uint32), np.zeros(2 * 3 * 4, np.int64)
    for windows in ((3, 4, 6, 9), (3, 4, 5, 8), (3, 4, 6, 6), (4, 3, 6, 8), (3, 4, 0, 8), (0, 4, 6, 8),
                    (3, 4, 12, 4), (-3, -4, 6, 8), (3, 4, 6, 8, 2), (3, 4, 6, 8, -1)):
        y = np.full(2 * windows[2] * windows[3] if min(windows[:4]) > 0 else 2 * 48, 7, np.uint32)
        assert core.max_unpool(x, idx, y, 2, True, False, 1, 0, 1, windows + (0,) * (5 - len(windows))) == -2
        assert (y == 7).all()
    y = np.full(2 * 48, 7, np.uint32)
    assert core.max_unpool(x, idx, y, 2, True, False, 1, 2, 1, (3, 4, 6, 8, 0)) == -2
    assert core.max_unpool(x, idx, y, 2, True, False, 1, 0, 1, (3, 4, 6, 8, 1)) == -1


@pytest.mark.parametrize("kind", POOL_DTYPES)
def test_windows_round_trip_through_max_unpool(rng, kind):
    """max_unpool on a 2x2 stride-2 pool with rows wide enough for the windows (and a larger
    output_shape), every dtype and thread count: the reference's result."""
    x = make_array(rng, (2, 3, 8, 40), kind)
    y, idx = pooling.max_pool(x, 2, strides=2, return_indices=True)
    for shape in (None, (2, 3, 9, 42)):
        want = reference.max_unpool(y, idx, 2, strides=2, output_shape=shape)
        for n_threads in (1, 2, 3):
            assert_same(pooling.max_unpool(y, idx, 2, strides=2, output_shape=shape, n_threads=n_threads), want)


def test_windows_chosen_for_2x2_stride_2_planes_only():
    """The plan hands the kernel its windows for NCHW 2x2 stride-2 pools without pads into an even
    output row at least twice x's (output_shape may add rows and columns), of x rows of at least 16
    values, and none otherwise."""
    import pooling.maxunpool as unpool_module

    def windows(shape, kernel, **kw):
        return unpool_module._plan(shape, kernel_shape=kernel, strides=kw.get("strides", kernel),
                                   pads=kw.get("pads"), output_shape=kw.get("output_shape"),
                                   layout=kw.get("layout", "NCHW"), opset=None).windows
    assert windows((1, 16, 128, 128), (2, 2)) == (128, 128, 256, 256, 0)
    assert windows((1, 64, 180, 240), (2, 2)) == (180, 240, 360, 480, 1)   # SegNet's 44 MB: streamed
    assert windows((2, 3, 4, 16), (2, 2), output_shape=(2, 3, 9, 34)) == (4, 16, 9, 34, 0)
    assert windows((2, 3, 4, 16), (2, 2), output_shape=(2, 3, 8, 33)) is None   # odd output row
    assert windows((2, 3, 4, 16), (2, 2), output_shape=(2, 3, 7, 32)) is None   # fewer rows than windows
    assert windows((2, 3, 4, 15), (2, 2)) is None                               # rows of x too short to pay
    assert windows((2, 3, 4, 16), (2, 2), pads=(1, 0, 0, 0)) is None
    assert windows((2, 3, 4, 16), (3, 3), strides=(2, 2)) is None
    assert windows((2, 3, 4, 16), (2, 2), strides=(1, 1)) is None
    assert windows((2, 4, 16, 3), (2, 2), layout="NHWC") is None
    assert windows((2, 3, 4, 16, 16), (2, 2, 2)) is None
    assert windows((2, 3, 0, 16), (2, 2), output_shape=(2, 3, 2, 32)) is None  # nothing to pool
    # ... and the kernel is handed them for 32-bit elements where its build has the vectors for them
    plan = unpool_module._plan((1, 16, 128, 128), kernel_shape=(2, 2), strides=(2, 2), pads=None, output_shape=None,
                               layout="NCHW", opset=None)
    assert unpool_module._windows(plan, np.dtype(np.float16)) is None
    assert unpool_module._windows(plan, np.dtype(np.float32)) == (plan.windows if unpool_module._core.UNPOOL_WINDOWS
                                                                  else None)


def test_storage_order_1_indices_do_not_round_trip():
    # Column-major encodings (h + w*H) land on the transposed position, as documented.
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    y, idx = pooling.max_pool(x, (2, 1), return_indices=True, storage_order=1)
    back = pooling.max_unpool(y, idx, (2, 1), output_shape=x.shape)
    assert idx.reshape(-1).tolist() == [1, 3, 5]          # (1, 0), (1, 1), (1, 2) column-major
    assert back.reshape(-1).tolist() == [0, 3, 0, 4, 0, 5]  # not [0, 0, 0, 3, 4, 5]


@pytest.mark.parametrize("shape, mode", [
    ((4, 8, 32, 32), "local"),        # many planes: each zeroed and scattered by one thread
    ((1, 2, 128, 128), "duplicates"),  # few planes: zeroed in slices, scattered per plane
    ((2, 4, 64, 64), "cross"),        # indices cross planes: one ordered pass
])
def test_thread_counts_identical(rng, shape, mode):
    x = make_array(rng, shape, "float32")
    out_shape = shape[:2] + tuple(2 * d for d in shape[2:])
    idx = unpool_indices(rng, shape, out_shape, mode)
    want = reference.max_unpool(x, idx, (2, 2), strides=(2, 2))
    for n_threads in (1, 2, 3, -1, None):
        assert_same(pooling.max_unpool(x, idx, (2, 2), strides=(2, 2), n_threads=n_threads), want)


@pytest.mark.parametrize("mode", MODES)
def test_fresh_zeroed_result_is_not_zeroed_twice(rng, monkeypatch, mode):
    # Large fresh results come from np.zeros and the kernel skips its own zeroing: forced here
    # for every size, the result is still the reference's for every zeroing path (planes zeroed
    # with their scatter, in slices first, indices crossing planes), and a caller's out= full of
    # garbage is still zeroed.
    import pooling._outputs as outputs_module
    x = make_array(rng, (2, 3, 9, 10), "float32")
    idx = unpool_indices(rng, x.shape, (2, 3, 18, 20), mode)
    want = reference.max_unpool(x, idx, 2, strides=2)
    monkeypatch.setattr(outputs_module, "_FRESH_ZEROS", 0)
    for n_threads in (1, 2, 3):
        assert_same(pooling.max_unpool(x, idx, 2, strides=2, n_threads=n_threads), want)
        out = np.full(want.shape, np.nan, np.float32)
        assert pooling.max_unpool(x, idx, 2, strides=2, n_threads=n_threads, out=out) is out
        assert_same(out, want)
    bad = idx.copy()
    bad[1, 2, 3, 4] = -1
    with pytest.raises(ValueError, match=r"indices\[1, 2, 3, 4\] = -1 is outside"):
        pooling.max_unpool(x, bad, 2, strides=2)


@pytest.mark.parametrize("kind", ["float16", "bfloat16", "float32", "float64", "int8"])
def test_memory_orders(rng, kind):
    x = make_array(rng, (2, 3, 4, 5), kind)
    idx = unpool_indices(rng, x.shape, (2, 3, 8, 10), "duplicates")
    want = reference.max_unpool(x, idx, (2, 2), strides=(2, 2))
    for name, xv in memory_orders(x):
        assert_same(pooling.max_unpool(xv, idx, 2, strides=2), want)
    for name, iv in memory_orders(idx):
        assert_same(pooling.max_unpool(x, iv, 2, strides=2), want)
    assert_same(pooling.max_unpool(x, idx.tolist(), 2, strides=2), want)


@pytest.mark.parametrize("index_dtype", ["int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64",
                                         ">i8", ">u4"])
def test_any_integer_indices_in_library_mode(rng, index_dtype):
    x = make_array(rng, (1, 2, 3, 3), "float32")
    idx = unpool_indices(rng, x.shape, (1, 2, 6, 6), "local")
    assert_same(pooling.max_unpool(x, idx.astype(index_dtype), 2, strides=2),
                reference.max_unpool(x, idx, (2, 2), strides=(2, 2)))


def test_inputs_never_modified(rng):
    for mode in MODES:
        x = make_array(rng, (4, 8, 16, 16), "float32")
        idx = unpool_indices(rng, x.shape, (4, 8, 32, 32), mode)
        x0, idx0 = x.copy(), idx.copy()
        pooling.max_unpool(x, idx, 2, strides=2, n_threads=2)
        assert_same(x, x0)
        assert_same(idx, idx0)


# -- versions -----------------------------------------------------------------

X = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
I = np.array([0, 3, 12, 15]).reshape(1, 1, 2, 2)


def test_opset_before_the_operator():
    with pytest.raises(ValueError, match=r"MaxUnpool: opset=8 .*first valid opset is 9"):
        pooling.max_unpool(X, I, 2, strides=2, opset=8)


@pytest.mark.parametrize("opset", [9, 10, 11, 21, 22, 23])
@pytest.mark.parametrize("kind", POOL_DTYPES)
def test_dtypes_per_version(opset, kind):
    x = to_dtype(X, kind)
    allowed = kind in ("float16", "float32", "float64") or (kind == "bfloat16" and opset >= 22)
    if allowed:
        assert_same(pooling.max_unpool(x, I, 2, strides=2, opset=opset),
                    reference.max_unpool(x, I, (2, 2), strides=(2, 2)))
    else:
        # The message says what would allow the dtype: a later opset, or library mode.
        where = (r"bfloat16 needs opset >= 22 \(or library mode, opset=None\)" if kind == "bfloat16"
                 else rf"{kind} is allowed in library mode only \(opset=None\)")
        with pytest.raises(TypeError, match=f"^MaxUnpool: x has dtype .*supported: float16.*; {where}$"):
            pooling.max_unpool(x, I, 2, strides=2, opset=opset)
    # Library mode takes every dtype MaxPool can produce.
    assert pooling.max_unpool(x, I, 2, strides=2).dtype == x.dtype


@pytest.mark.parametrize("opset", [9, 11, 22])
def test_indices_int64_only_under_opset(opset):
    for dtype in ("int32", "uint64", "int8"):
        with pytest.raises(TypeError, match=rf"^MaxUnpool: indices has dtype {dtype}.*supported: int64; "
                                            rf"{dtype} is allowed in library mode only \(opset=None\)$"):
            pooling.max_unpool(X, I.astype(dtype), 2, strides=2, opset=opset)
        pooling.max_unpool(X, I.astype(dtype), 2, strides=2)  # library mode
    with pytest.raises(TypeError, match="output_shape must be int64 under opset"):
        pooling.max_unpool(X, I, 2, strides=2, output_shape=np.array([1, 1, 4, 4], np.int32), opset=opset)
    y = pooling.max_unpool(X, I, 2, strides=2, output_shape=np.array([1, 1, 4, 4]), opset=opset)
    assert y.shape == (1, 1, 4, 4)


# -- output_shape ---------------------------------------------------------------

@pytest.mark.parametrize("given", [[1, 1, 5, 5], (1, 1, 5, 5), np.array([1, 1, 5, 5]),
                                   np.array([1, 1, 5, 5], np.int32), np.array([1, 1, 5, 5], np.uint8)])
def test_output_shape_forms_replace_the_inferred_shape_and_pads(given):
    y = pooling.max_unpool(X, I, 2, strides=2, pads=(3, 3, 3, 3), output_shape=given)
    assert y.shape == (1, 1, 5, 5)
    assert_same(y, reference.max_unpool(X, I, (2, 2), output_shape=(1, 1, 5, 5)))
    assert pooling.max_unpool_output_shape(X.shape, 2, pads=3, output_shape=given) == (1, 1, 5, 5)


@pytest.mark.parametrize("given, error, message", [
    ([1, 1, 16], ValueError, r"output_shape must have 4 values, got 3"),
    ([1, 1, 4, 4, 1], ValueError, r"output_shape must have 4 values, got 5"),
    ([2, 1, 4, 4], ValueError, r"output_shape \[2, 1, 4, 4\] must keep N and C of x \[1, 1, 2, 2\]"),
    ([1, 3, 4, 4], ValueError, r"output_shape \[1, 3, 4, 4\] must keep N and C"),
    ([1, 1, -4, 4], ValueError, r"output_shape values must be >= 0, got \[1, 1, -4, 4\]"),
    ([1, 1, 2**31, 2**31], ValueError,
     r"output shape \[1, 1, 2147483648, 2147483648\], 4611686018427387904 elements, is past the 2\*\*62 limit"),
    ([1, 1, 2**62, 1], ValueError, r"output_shape value 4611686018427387904 is past the 2\*\*62 limit"),
    (16, TypeError, r"output_shape must be a list, tuple or 1-D int64 array of 4 values, got 16"),
    (np.array(16), TypeError, r"output_shape must be a 1-D integer array"),
    (np.array([[1, 1, 4, 4]]), TypeError, r"output_shape must be a 1-D integer array"),
    (np.array([1.0, 1, 4, 4]), TypeError, r"output_shape must be a 1-D integer array, got dtype float64"),
    ([1, 1, 4.0, 4], TypeError, r"output_shape must be an integer, got 4.0"),
    ([1, 1, True, 4], TypeError, r"output_shape must be an integer, got True"),
])
def test_bad_output_shape(given, error, message):
    with pytest.raises(error, match=rf"^MaxUnpool: {message}"):
        pooling.max_unpool(X, I, 2, strides=2, output_shape=given)
    with pytest.raises(error, match=rf"^MaxUnpool: {message}"):
        pooling.max_unpool_output_shape(X.shape, 2, strides=2, output_shape=given)


def test_huge_inferred_shape_fails_before_allocating():
    with pytest.raises(ValueError, match=r"output shape .* is past the 2\*\*62 limit"):
        pooling.max_unpool(np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 3, 3), np.int64),
                           2, strides=2**31)
    with pytest.raises(ValueError, match=r"inferred output dimension 0 \(\d+\) is past the 2\*\*62 limit"):
        pooling.max_unpool_output_shape((0, 1, 2**40), 2, strides=2**61)


def test_non_positive_inferred_dimension():
    message = r"inferred output dimension 1 would be 0: \(x dim 1 - 1\) \* stride 1 - pads \(1 \+ 1\) \+ kernel 2"
    with pytest.raises(ValueError, match=message):
        pooling.max_unpool(np.ones((1, 1, 2, 1)), np.zeros((1, 1, 2, 1), np.int64), 2, pads=(0, 1, 0, 1))
    with pytest.raises(ValueError, match="dimension 0 would be -1"):
        pooling.max_unpool_output_shape((1, 1, 1), 1, pads=(1, 1))
    # output_shape makes the pads irrelevant.
    y = pooling.max_unpool(np.ones((1, 1, 2, 1)), np.array([0, 1]).reshape(1, 1, 2, 1), 2,
                           pads=(0, 1, 0, 1), output_shape=(1, 1, 1, 2))
    assert y.tolist() == [[[[1.0, 1.0]]]]


def test_empty_shapes():
    # N = 0, an empty spatial axis, and an empty output that nothing must be written to.
    assert pooling.max_unpool(np.ones((0, 3, 4)), np.ones((0, 3, 4), np.int64), 2, strides=2).shape == (0, 3, 8)
    y = pooling.max_unpool(np.ones((2, 3, 0)), np.ones((2, 3, 0), np.int64), 3)
    assert y.shape == (2, 3, 2) and not y.any()
    y = pooling.max_unpool(np.ones((2, 3, 0)), np.ones((2, 3, 0), np.int64), 3, output_shape=(2, 3, 0))
    assert y.shape == (2, 3, 0)
    with pytest.raises(ValueError, match=r"indices\[0, 0, 0\] = 0 is outside \[0, 0\)"):
        pooling.max_unpool(np.ones((1, 1, 2)), np.zeros((1, 1, 2), np.int64), 2, output_shape=(1, 1, 0))


# -- bad indices ------------------------------------------------------------------

@pytest.mark.parametrize("bad, where", [
    ({(0, 1, 1, 0): 16, (1, 0, 0, 0): 40}, "[0, 1, 1, 0] = 16"),   # == Y.size
    ({(1, 1, 1, 1): -1}, "[1, 1, 1, 1] = -1"),
    ({(0, 0, 1, 0): 99, (0, 0, 0, 1): -7}, "[0, 0, 0, 1] = -7"),   # first in row-major order of I
    ({(1, 0, 0, 1): -2**63}, "[1, 0, 0, 1] = -9223372036854775808"),
])
@pytest.mark.parametrize("order", ["C", "F"])
def test_bad_index_is_named_and_nothing_is_written_out_of_bounds(bad, where, order):
    x = np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)
    for mode in ("local", "cross"):
        idx = unpool_indices(np.random.default_rng(1), x.shape, (2, 2, 2, 2), mode)
        for pos, value in bad.items():
            idx[pos] = value
        # out= sits inside a larger buffer whose rest must stay untouched.
        buffer = np.full(64, 7.0, np.float32)
        out = buffer[16:32].reshape(2, 2, 2, 2)
        with pytest.raises(ValueError, match=rf"^MaxUnpool: indices{re.escape(where)} is outside \[0, 16\)"):
            pooling.max_unpool(x, np.asarray(idx, order=order), 1, out=out)
        assert (buffer[:16] == 7.0).all() and (buffer[32:] == 7.0).all()


def test_first_bad_index_with_several_threads(rng):
    # Large enough to be checked in parallel pieces; the first bad one in I's order is named.
    x = make_array(rng, (1, 2, 128, 128), "float32")
    for mode in ("local", "cross"):
        idx = unpool_indices(rng, x.shape, (1, 2, 256, 256), mode)
        idx[0, 1, 100, 3] = -5
        idx[0, 1, 7, 9] = 2**18
        idx[0, 1, 120, 0] = 2**40
        for n_threads in (1, 2, 3):
            with pytest.raises(ValueError, match=r"indices\[0, 1, 7, 9\] = 262144 is outside \[0, 131072\)"):
                pooling.max_unpool(x, idx, 2, strides=2, n_threads=n_threads)


def test_huge_unsigned_index_is_named_with_its_value():
    idx = np.array([0, 2**63 + 5, 1, 2], np.uint64).reshape(1, 1, 4)
    with pytest.raises(ValueError, match=r"indices\[0, 0, 1\] = 9223372036854775813 is outside \[0, 4\)"):
        pooling.max_unpool(np.ones((1, 1, 4)), idx, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_, np.complex64, object])
def test_non_integer_indices_are_type_errors(dtype):
    with pytest.raises(TypeError, match=r"MaxUnpool: indices has dtype .* not supported"):
        pooling.max_unpool(X, I.astype(dtype), 2, strides=2)


@pytest.mark.parametrize("name, value, message", [
    ("x", None, r"x must be an array of numbers, got None \(NoneType\)"),
    ("x", "abc", r"x must be an array of numbers, got 'abc' \(str\)"),
    ("x", 2.5, r"x must be an array of numbers, got 2.5 \(float\)"),
    ("x", [[[None, 1.0]]], r"x has dtype object: it must be an array of numbers, got \[\[\[None, 1.0\]\]\] \(list\)"),
    ("indices", None, r"indices must be an array of numbers, got None \(NoneType\)"),
    ("indices", "0", r"indices must be an array of numbers, got '0' \(str\)"),
    ("indices", 3, r"indices must be an array of numbers, got 3 \(int\)"),
    ("indices", np.int64(0), r"indices must be an array of numbers, got np.int64\(0\) \(int64\)"),
    ("indices", [[[0, "1"]]], r"indices has dtype <U21: it must be an array of numbers, got .* \(list\)"),
    ("indices", [[[0, 1], [2]]], r"indices must be an array of numbers, got .* \(list\): .*inhomogeneous.*"),
])
def test_inputs_that_are_not_arrays_of_numbers(name, value, message):
    """A TypeError naming operator, parameter and value, not an error about its shape."""
    args = {"x": X, "indices": I, name: value}
    with pytest.raises(TypeError, match=rf"^MaxUnpool: {message}$"):
        pooling.max_unpool(args["x"], args["indices"], 2, strides=2)


@pytest.mark.parametrize("call, error, message", [
    (lambda: pooling.max_unpool(X, I[..., :1], 2, strides=2), ValueError,
     r"indices must have the shape of x \[1, 1, 2, 2\], got \[1, 1, 2, 1\]"),
    (lambda: pooling.max_unpool(X[0, 0], I[0, 0], 2), ValueError, r"x must have rank >= 3"),
    (lambda: pooling.max_unpool(X, I, None), ValueError, r"kernel_shape is required"),
    (lambda: pooling.max_unpool(X, I, (2, 2, 2)), ValueError, r"kernel_shape must have 2 values"),
    (lambda: pooling.max_unpool(X, I, 0), ValueError, r"kernel_shape values must be >= 1"),
    (lambda: pooling.max_unpool(X, I, 2, strides=(1, 0)), ValueError, r"strides values must be >= 1"),
    (lambda: pooling.max_unpool(X, I, 2, pads=(0, -1, 0, 0)), ValueError, r"pads values must be >= 0"),
    (lambda: pooling.max_unpool(X, I, 2, pads=(1, 1)), ValueError, r"pads must have 4 values"),
    (lambda: pooling.max_unpool(X, I, 2, layout="NDHWC"), ValueError, r"layout must be one of \[.NCHW., .NHWC.\]"),
    (lambda: pooling.max_unpool(X, I, 2, layout=["NCHW"]), TypeError, r"layout must be a string"),
    (lambda: pooling.max_unpool(X, I, 2, strides={1: 2}), TypeError, r"strides has unsupported type dict"),
    (lambda: pooling.max_unpool_output_shape((1, 1, 2.0), 2), TypeError, r"x_shape must be an integer"),
    (lambda: pooling.max_unpool(X, I, 2, n_threads=0), ValueError, r"n_threads must be non-zero"),
    (lambda: pooling.max_unpool(X.astype(np.int16), I, 2, opset=22), TypeError, r"x has dtype int16"),
    (lambda: pooling.max_unpool(X.astype(np.complex64), I, 2), TypeError, r"x has dtype complex64"),
    (lambda: pooling.max_unpool(X, I, 2.0), TypeError, r"kernel_shape must be an integer"),
    (lambda: pooling.max_unpool(X, I, 2, opset=11.0), TypeError, r"opset must be an integer"),
])
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=rf"^MaxUnpool: {message}"):
        call()


# -- out= ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["float32", "bfloat16", "uint8"])
def test_out(rng, kind):
    x = make_array(rng, (2, 3, 4, 4), kind)
    idx = unpool_indices(rng, x.shape, (2, 3, 8, 8), "duplicates")
    out = np.empty((2, 3, 8, 8), dtype=POOL_DTYPES[kind])
    out.view(np.uint8)[...] = 0xAB  # garbage that must be zeroed
    assert pooling.max_unpool(x, idx, 2, strides=2, out=out) is out
    assert_same(out, reference.max_unpool(x, idx, (2, 2), strides=(2, 2)))


def test_bad_out():
    y = np.zeros((1, 1, 4, 4), np.float32)
    for bad in (y[..., :3], y.astype(np.float64), np.zeros((1, 1, 4, 8), np.float32)[..., ::2]):
        with pytest.raises(ValueError, match="MaxUnpool: out must"):
            pooling.max_unpool(X, I, 2, strides=2, out=bad)
    with pytest.raises(TypeError, match="MaxUnpool: out must be a numpy array, got list"):
        pooling.max_unpool(X, I, 2, strides=2, out=[0.0] * 16)
    ro = y.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        pooling.max_unpool(X, I, 2, strides=2, out=ro)
    # Aliasing the indices could steer the scatter out of bounds: refused like aliasing x.
    buf = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match="must not overlap the input"):
        pooling.max_unpool(buf[:4].reshape(X.shape), I, 2, strides=2, out=buf[:16].reshape(1, 1, 4, 4))
    ibuf = np.zeros(16, np.int64)
    ibuf[:4] = I.reshape(-1)
    with pytest.raises(ValueError, match="must not overlap the input"):
        pooling.max_unpool(X, ibuf[:4].reshape(I.shape), 2, strides=2,
                           out=ibuf.view(np.float32)[:16].reshape(1, 1, 4, 4))


def test_bfloat16_dtypes_round_trip_their_own_dtype(rng):
    from pooling._dtypes import LEGACY_BFLOAT16

    x = make_array(rng, (1, 2, 3, 3), "bfloat16")
    idx = unpool_indices(rng, x.shape, (1, 2, 6, 6), "local")
    legacy = x.view(LEGACY_BFLOAT16)
    y = pooling.max_unpool(legacy, idx, 2, strides=2)
    assert y.dtype == LEGACY_BFLOAT16
    assert_same(y.view(BFLOAT16), pooling.max_unpool(x, idx, 2, strides=2))


def test_command_line_check():
    from pooling.__main__ import _same, cases

    case, = [c for c in cases() if c.name.startswith("MaxUnpool")]
    assert _same(case.fast(), case.ref())
    assert _same(case.fast(n_threads=1), case.ref())

