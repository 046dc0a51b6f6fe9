"""max_pool_grad (behaviour.md §6.3): torch autograd's gradient, the twin to the bit for every
n_threads, every encoding and float dtype, errors and edge cases."""
import itertools

import numpy as np
import pytest

import pooling
from conftest import (FLOAT_KINDS, BFLOAT16, TORCH_POOL_CASES, assert_same, as_float64, make_array, tie_free,
                      to_dtype, to_nhwc, torch_pool_attrs)
from pooling import reference

FORMATS = ("onnx", "plane", "tf", "tf_batch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rank, args", TORCH_POOL_CASES)
def test_equals_torch_autograd(rank, args, dtype, rng):
    torch = pytest.importorskip("torch")
    x = tie_free(rng, (2, 3) + (9, 8, 7)[:rank], dtype)
    t = torch.from_numpy(x).requires_grad_(True)
    ty = getattr(torch.nn.functional, f"max_pool{rank}d")(t, **args)
    g = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.from_numpy(g))
    want = t.grad.numpy()
    attrs = torch_pool_attrs(args, rank)
    for fmt, layout in itertools.product(FORMATS, ("NCHW", "NHWC")):
        xl, gl = (x, g) if layout == "NCHW" else (to_nhwc(x), to_nhwc(g))
        _, idx = pooling.max_pool(xl, return_indices=True, index_format=fmt, layout=layout, **attrs)
        for nt in (1, 2):
            got = pooling.max_pool_grad(gl, idx, xl.shape, index_format=fmt, layout=layout, n_threads=nt)
            assert got.dtype == dtype
            # torch sums a pixel's terms in another order where windows overlap: to the rounding.
            np.testing.assert_allclose(got if layout == "NCHW" else np.moveaxis(got, -1, 1), want,
                                       rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6,
                                       err_msg=f"{fmt} {layout} nt={nt}")


def test_equals_torch_channels_last(rng):
    torch = pytest.importorskip("torch")
    x = tie_free(rng, (2, 5, 9, 8), np.float32)
    t = torch.from_numpy(x).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    ty, ti = torch.nn.functional.max_pool2d(t, 3, 2, 1, return_indices=True)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    ty.backward(torch.from_numpy(g))
    got = pooling.max_pool_grad(to_nhwc(g), to_nhwc(ti.numpy()), to_nhwc(x).shape, index_format="plane",
                                layout="NHWC")
    np.testing.assert_array_equal(got, to_nhwc(t.grad.numpy()))


def _case(rng, kind, layout, rank, shape=None):
    """(grad_y, onnx indices, x_shape): a pool with overlapping windows and empty ones."""
    x = make_array(rng, shape or (2, 3) + (7, 6, 5)[:rank], kind)
    if layout == "NHWC":
        x = to_nhwc(x)
    attrs = dict(kernel_shape=3, strides=(1,) + (2,) * (rank - 1), pads=(1,) * rank + (3,) * rank)
    y, onnx = pooling.max_pool(x, return_indices=True, layout=layout, **attrs)
    g = to_dtype(np.round(rng.standard_normal(y.shape) * 64) / 16 + rng.standard_normal(y.shape) * 1e-3, kind)
    return g, onnx, x.shape


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_twin_bit_identical_every_format_and_n_threads(kind, rank, layout, rng):
    g, onnx, x_shape = _case(rng, kind, layout, rank)
    assert (onnx == -1).any()  # empty windows contribute nothing
    for fmt in FORMATS:
        idx = pooling.convert_indices(onnx, x_shape, from_format="onnx", to_format=fmt, layout=layout)
        want = reference.max_pool_grad(g, idx, x_shape, index_format=fmt, layout=layout)
        for nt in (1, 2, 3, 4, 7):
            got = pooling.max_pool_grad(g, idx, x_shape, index_format=fmt, layout=layout, n_threads=nt)
            assert_same(got, want)


# NHWC windows (kernel, strides, pads, dilations) whose rows reach 0 to 3 rows over a band's cut either way
BAND_WINDOWS = ((2, 2, 0, 1), (3, 2, 1, 1), (3, 1, 1, 1), (5, 1, 2, 1), (7, 1, 3, 1), (3, 1, 2, 2), (1, 3, 0, 1))


@pytest.mark.parametrize("band_rows", [1, 4])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_nhwc_images_cut_into_bands_of_rows(kind, rank, band_rows, rng, monkeypatch):
    # (16-bit floats keep whole images, so they check that the bands stay off there.)
    """NHWC with fewer images than threads: each image summed as bands of rows, one thread each, a
    band's thread taking the terms of its neighbours' rows that reach into its slice; with windows
    from none to three rows over a cut, bands as short as one row (whose halos can pass a whole
    band: summed again), bit for bit the twin for every format and n_threads.  An index beyond its
    window's rows (not MaxPool's) sends the call back to whole images, one into another image to
    the ordered pass."""
    import pooling._threads
    import pooling.maxpool_grad as grad_module
    from pooling._dtypes import HALF_INF_BITS
    monkeypatch.setattr(grad_module, "_BAND_ROWS", band_rows)
    monkeypatch.setattr(pooling._threads, "SERIAL_BELOW", 0)  # (these small calls would run on one thread)
    runs = []  # (groups, status) of each kernel run of a call

    def run(*args):
        status = real_run(*args)
        runs.append((args[12] if len(args) > 12 else 1, status))
        return status

    real_run = grad_module._run
    monkeypatch.setattr(grad_module, "_run", run)
    half = HALF_INF_BITS.get(kind, 0)
    for n, rows in ((1, 7), (1, 13), (2, 9), (3, 4)):
        for nt in (2, 3, 5):
            bands = grad_module._row_bands("NHWC", n, rows, nt, half)
            assert bands == (1 if n >= nt or half else max(1, min(-(-nt // n), rows // band_rows)))
        assert grad_module._row_bands("NCHW", 1, 64, 2) == 1
    for n, c, (k, s, p, d) in itertools.product((1, 2), (1, 3), BAND_WINDOWS):
        x = make_array(rng, (n, c) + (13, 5, 4)[:rank], kind)
        x = to_nhwc(x)
        y, onnx = pooling.max_pool(x, (k,) + (2,) * (rank - 1), strides=(s,) + (1,) * (rank - 1),
                                   pads=(p,) + (0,) * (rank - 1) + (p,) + (1,) * (rank - 1),
                                   dilations=(d,) + (1,) * (rank - 1), return_indices=True, layout="NHWC")
        g = to_dtype(np.round(rng.standard_normal(y.shape) * 64) / 16 + rng.standard_normal(y.shape) * 1e-3, kind)
        for fmt in FORMATS:
            idx = pooling.convert_indices(onnx, x.shape, from_format="onnx", to_format=fmt, layout="NHWC")
            cases = [idx]
            valid = np.flatnonzero(idx.reshape(-1) >= 0)
            if valid.size > 1:
                far = idx.copy()
                far.reshape(-1)[valid[0]] = idx.reshape(-1)[valid[-1]]  # a first row's term into the last row
                cases.append(far)
            if fmt in ("onnx", "tf_batch") and n > 1:
                other = idx.copy()
                other.reshape(-1)[0] = np.prod(x.shape[1:]) + 1  # into the second image
                cases.append(other)
            for case, name in zip(cases, ("maxpool", "far", "other")):
                want = reference.max_pool_grad(g, case, x.shape, index_format=fmt, layout="NHWC")
                for nt in (1, 2, 3, 5):
                    runs.clear()
                    got = pooling.max_pool_grad(g, case, x.shape, index_format=fmt, layout="NHWC", n_threads=nt)
                    assert_same(got, want)
                    bands = grad_module._row_bands("NHWC", n, y.shape[1], nt, half)
                    assert runs[0][0] == bands
                    if bands > 1 and name == "maxpool" and d == 1 and y.shape[1] // bands >= 3:
                        assert runs == [(bands, 0)]  # summed by the bands themselves
                    if bands > 1 and name == "far":
                        assert runs[0][1] == 1  # where no band looks: summed again


def _band_kernel(dtype):
    from pooling._dispatch import core
    from pooling._dtypes import C_TYPES
    return core.max_pool_grad[C_TYPES[np.dtype(dtype)]]


def test_bands_of_rows_in_the_kernel(rng):
    """The kernel's contract on groups (bands of rows), and the status it returns: 0 for MaxPool's
    indices with every undilated window and band count (the bands' own path, not the whole images'),
    1 for a target where no band looks: two rows or more beyond a cut, or behind a row of the halo
    that does not reach over it."""
    kernel = _band_kernel(np.float32)
    g, idx, y = np.ones(12, np.float32), np.arange(12, dtype=np.int64), np.empty(12, np.float32)
    run = lambda groups, rows_out, rows_in, C=1: kernel(g, idx, y, None, 1, C, 12, 1, 0, 12, 0, False, 2, groups,
                                                        rows_out, rows_in)
    assert run(1, 1, 1) == 0 and run(2, 2, 2) == 0 and run(2, 12, 12) == 0 and run(2, 3, 4) == 0
    assert run(0, 2, 2) == -2 and run(3, 2, 2) == -2  # groups in [1, rows_out]
    assert run(2, 5, 2) == -2 and run(2, 2, 5) == -2  # whole rows of g and of y
    assert run(2, 2, 2, C=4) == -2  # a row of g a whole number of pixels
    assert run(2, 2, 2, C=3) == 0
    half = _band_kernel(np.uint16)  # (16-bit floats as their bits): whole parts only
    h, hy, acc = np.ones(12, np.float16).view(np.uint16), np.empty(12, np.uint16), np.empty((2, 12), np.float32)
    assert half(h, idx, hy, acc, 1, 1, 12, 1, 0, 12, 0x7C00, False, 2, 2, 2, 2) == -2
    assert half(h, idx, hy, acc, 1, 1, 12, 1, 0, 12, 0x7C00, False, 2, 1, 2, 2) == 0
    for (k, s, p, dil), c, fmt in itertools.product(BAND_WINDOWS, (1, 4), ("onnx", "plane")):
        x = rng.standard_normal((1, 23, 3, c)).astype(np.float32)
        _, ii = pooling.max_pool(x, (k, 2), strides=(s, 1), pads=(p, 0, p, 1), dilations=(dil, 1),
                                 return_indices=True, layout="NHWC", index_format=fmt)
        gg = rng.standard_normal(ii.shape).astype(np.float32)
        want = reference.max_pool_grad(gg, ii, x.shape, index_format=fmt, layout="NHWC")
        a, cc = (c, 1) if fmt == "plane" else (1, 0)
        for groups in range(1, ii.shape[1] // 3 + 1):  # (bands of 3 rows or more: no window reaches further)
            out = np.full(x.size, np.nan, np.float32)
            status = kernel(gg.reshape(-1), ii.reshape(-1), out, None, 1, c, x.size, a, cc, x.size * (a == 1), 0,
                            False, 2, groups, ii.shape[1], x.shape[1])
            # A window's crossing rows follow one another, except with dilated taps: rows of the other
            # parity may not reach over the cut between two that do, and a halo stops at the first
            # row that does not (summed again, in the other test).
            assert status == 0 or (dil > 1 and status == 1), (k, s, p, dil, groups)
            if status == 0:
                np.testing.assert_array_equal(out.reshape(x.shape), want)
    # Targets placed by hand, one pixel per row (C=1, W=1): dy's 8 rows in two bands (rows 0-3, 4-7),
    # dx's 8 rows likewise (cut at 4).
    base = np.arange(8, dtype=np.int64)
    for changed, status in (({}, 0), ({3: 4}, 0), ({3: 4, 4: 3}, 0), ({3: 5, 2: 4}, 0),  # halos of 1 and 2 rows
                            ({2: 4}, 1),          # row 2 reaches over the cut, row 3 (its halo's end) does not
                            ({5: 3}, 1),          # likewise forwards: row 5, behind row 4
                            ({0: 7}, 1), ({7: 0}, 1)):  # no halo reaches that far
        ii = base.copy()
        for row, target in changed.items():
            ii[row] = target
        gg = rng.standard_normal(8).astype(np.float32)
        out = np.full(8, np.nan, np.float32)
        assert kernel(gg, ii, out, None, 1, 1, 8, 1, 0, 8, 0, False, 2, 2, 8, 8) == status, changed
        if status == 0:
            want = reference.max_pool_grad(gg.reshape(1, 8, 1), ii.reshape(1, 8, 1), (1, 8, 1), layout="NHWC")
            np.testing.assert_array_equal(out, want.reshape(-1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parts_zeroed_just_ahead_of_targets_in_any_order(dtype, rng):
    """Each part of dx is zeroed just ahead of its targets, a stretch at a time, as the terms reach
    them (src/kernels/maxpool_grad.pxi): targets rising, falling and in random order with repeats,
    jumps past several stretches, elements no target reaches (they stay zero; in the last case the
    whole last two thirds of each part), into an out= full of NaN, whole parts and NHWC bands of
    rows (targets kept inside each band's slice, so that the bands' own path sums them): the twin to
    the bit."""
    for layout, x_shape, g_shape in (("NCHW", (2, 3, 64, 70), (2, 3, 30, 31)),
                                     ("NHWC", (1, 40, 41, 32), (1, 30, 31, 32)),
                                     ("NHWC", (2, 40, 41, 32), (2, 30, 31, 32))):
        plane = x_shape[2] * x_shape[3] if layout == "NCHW" else x_shape[1] * x_shape[2]
        g = rng.standard_normal(g_shape).astype(dtype)
        axes = (2, 3) if layout == "NCHW" else (1, 2)
        lead = tuple(np.delete(g_shape, axes))
        # Segments of a part's terms and the targets they get: one image with two threads is cut
        # into two bands, dy's rows 0-14 and 15-29, whose slices are dx's rows 0-19 and 20-39.
        cut = g_shape[3] * 15, x_shape[2] * 20
        segments = ([(slice(None), 0, plane)] if x_shape[0] > 1 or layout == "NCHW" else
                    [(slice(0, cut[0]), 0, cut[1]), (slice(cut[0], None), cut[1], plane - cut[1])])
        orders = {name: np.empty(lead + (g_shape[axes[0]] * g_shape[axes[1]],), np.int64)
                  for name in ("rising", "falling", "random", "third")}
        for part, low, width in segments:  # (terms, their targets' range [low, low + width))
            flat = low + rng.integers(0, width, orders["random"][..., part].shape)
            flat[..., ::7] = -1
            orders["random"][..., part] = flat
            orders["rising"][..., part] = np.sort(flat, axis=-1)
            orders["falling"][..., part] = np.sort(flat, axis=-1)[..., ::-1]
            orders["third"][..., part] = np.where(flat < 0, -1, low + (flat - low) // 3)  # (the end unreached)
        for order in orders.values():
            idx = np.ascontiguousarray(np.moveaxis(order.reshape(lead + tuple(g_shape[a] for a in axes)),
                                                   (-2, -1), axes))
            want = reference.max_pool_grad(g, idx, x_shape, index_format="plane", layout=layout)
            assert (want == 0).mean() > 0.5  # most of dx is reached by no term
            for nt in (1, 2):
                out = np.full(x_shape, np.nan, dtype)
                got = pooling.max_pool_grad(g, idx, x_shape, index_format="plane", layout=layout, n_threads=nt,
                                            out=out)
                assert_same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [8, 24, 64])
def test_nhwc_plane_blocks_without_tests_per_term(dtype, channels, rng):
    """NHWC "plane" terms go in blocks (src/kernels/maxpool_grad.pxi, _grad_band_run): a block whose
    indices are all in range with every target in its slice is added with no test per term, any other
    term by term.  Random targets anywhere in the image, rising, falling or in random order, with -1
    only in the first block, an index at the image's last pixel, 1-3 threads (whole images; bands of
    rows, whose result stands in some of these cases and in others, with targets past a band's reach,
    is summed again whole), into an out= full of NaN: the twin to the bit."""
    for n in (1, 2):
        x_shape, g_shape = (n, 40, 41, channels), (n, 30, 31, channels)
        plane = 40 * 41
        g = rng.standard_normal(g_shape).astype(dtype)
        flat = rng.integers(0, plane, (n, 30 * 31, channels))
        flat[:, :5] = -1          # a few pixels of -1 in the first block of each image
        flat[:, -1, 0] = plane - 1
        for order in (flat, np.sort(flat, axis=1), np.sort(flat, axis=1)[:, ::-1]):
            idx = np.ascontiguousarray(order.reshape(g_shape))
            want = reference.max_pool_grad(g, idx, x_shape, index_format="plane", layout="NHWC")
            for nt in (1, 2, 3):
                out = np.full(x_shape, np.nan, dtype)
                got = pooling.max_pool_grad(g, idx, x_shape, index_format="plane", layout="NHWC", n_threads=nt,
                                            out=out)
                assert_same(got, want)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_onnx_indices_into_other_planes_are_summed_in_order(kind, layout, rng):
    """Indices made elsewhere: every target anywhere in x, many shared; the ordered path."""
    shape = (3, 4, 6, 5) if layout == "NCHW" else (3, 6, 5, 4)
    g = to_dtype(rng.standard_normal(shape) * 100, kind)
    idx = rng.integers(-1, int(np.prod(shape)), size=shape)
    want = reference.max_pool_grad(g, idx, shape, layout=layout)
    for fmt in ("onnx", "tf_batch") if layout == "NHWC" else ("onnx",):
        for nt in (1, 2, 3, 8):
            assert_same(pooling.max_pool_grad(g, idx, shape, layout=layout, index_format=fmt, n_threads=nt), want)
    # "tf_batch" names n and c as "onnx" does: the same targets (in NCHW, read after a conversion).
    tf_batch = pooling.convert_indices(idx, shape, from_format="onnx", to_format="tf_batch", layout=layout)
    assert_same(pooling.max_pool_grad(g, tf_batch, shape, layout=layout, index_format="tf_batch", n_threads=2),
                want)


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_nchw_tf_indices_into_other_channels_are_summed_in_order(kind, rng):
    """NCHW "tf" (p*C + c) names its channel, which may be another than its own plane's."""
    shape = (3, 4, 6, 5)
    g = to_dtype(rng.standard_normal(shape) * 100, kind)
    tf = rng.integers(-1, 4 * 6 * 5, size=shape)
    c = np.arange(4).reshape(1, 4, 1, 1)
    assert ((tf >= 0) & (tf % 4 != c)).any()  # some target lies in another channel's plane
    want = reference.max_pool_grad(g, tf, shape, index_format="tf")
    for nt in (1, 2, 3, 7):
        assert_same(pooling.max_pool_grad(g, tf, shape, index_format="tf", n_threads=nt), want)
    # The twin's target: channel c = tf % C and position p = tf // C of the index's own image.
    n = np.broadcast_to(np.arange(3).reshape(3, 1, 1, 1), shape)
    dx = np.zeros(shape)
    valid = tf >= 0
    np.add.at(dx, (n[valid], tf[valid] % 4, *np.unravel_index(tf[valid] // 4, (6, 5))),
              as_float64(g)[valid])
    tol = {"float64": 1e-13, "float32": 1e-6}.get(kind, 1e-2)  # (summed in the dtype, or float32 rounded once)
    np.testing.assert_allclose(as_float64(want), dx, rtol=tol, atol=tol * 1e3)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_16_bit_sums_in_float32_rounded_once(kind):
    # 1 + 8 * 2**-11 (float16) or 8 * 2**-8 (bfloat16): each term alone rounds away.
    eps = 2.0 ** (-11 if kind == "float16" else -8)
    g = to_dtype(np.array([[[1.0] + [eps] * 8]]), kind)
    idx = np.zeros((1, 1, 9), np.int64)
    got = pooling.max_pool_grad(g, idx, (1, 1, 3))
    assert as_float64(got).ravel().tolist() == [1.0 + 8 * eps, 0.0, 0.0]


def test_minus_one_contributes_nothing_and_inputs_are_kept(rng):
    g = rng.standard_normal((1, 2, 3)).astype(np.float32)
    idx = np.array([[[0, -1, 3], [-1, -1, -1]]])
    g0, i0 = g.copy(), idx.copy()
    got = pooling.max_pool_grad(g, idx, (1, 2, 4))
    assert got.tolist() == [[[g[0, 0, 0], 0, 0, g[0, 0, 2]], [0, 0, 0, 0]]]
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(idx, i0)


def test_any_integer_indices_and_memory_orders(rng):
    g, onnx, x_shape = _case(rng, "float32", "NCHW", 2)
    want = pooling.max_pool_grad(g, onnx, x_shape)
    for dtype in (np.int32, np.int16, np.uint32, np.uint64):
        i = np.where(onnx < 0, 0, onnx).astype(dtype)  # (unsigned: no -1)
        w = reference.max_pool_grad(g, i, x_shape)
        assert_same(pooling.max_pool_grad(g, i, x_shape), w)
    assert_same(pooling.max_pool_grad(np.asfortranarray(g), np.asfortranarray(onnx), x_shape), want)
    assert_same(pooling.max_pool_grad(g[:, ::-1][:, ::-1], onnx, list(x_shape)), want)
    assert_same(pooling.max_pool_grad(g.astype(">f4"), onnx, x_shape), want)


def test_bfloat16_dtypes(rng):
    g, onnx, x_shape = _case(rng, "bfloat16", "NCHW", 2)
    got = pooling.max_pool_grad(g, onnx, x_shape)
    assert got.dtype == BFLOAT16
    legacy = g.view(np.uint16).view(np.dtype((np.uint16, {"bfloat16": (np.uint16, 0)})))
    assert_same(pooling.max_pool_grad(legacy, onnx, x_shape).view(np.uint16), got.view(np.uint16))


def test_out(rng):
    g, onnx, x_shape = _case(rng, "float32", "NCHW", 2)
    want = pooling.max_pool_grad(g, onnx, x_shape)
    out = np.full(x_shape, np.nan, np.float32)
    assert pooling.max_pool_grad(g, onnx, x_shape, out=out) is out
    assert_same(out, want)
    with pytest.raises(ValueError, match=r"max_pool_grad: out must have shape \[2, 3, 7, 6\] and dtype float32"):
        pooling.max_pool_grad(g, onnx, x_shape, out=np.empty(x_shape, np.float64))
    with pytest.raises(ValueError, match=r"max_pool_grad: out must be a writeable, aligned, C-contiguous"):
        pooling.max_pool_grad(g, onnx, x_shape, out=np.empty(x_shape, np.float32, order="F"))
    with pytest.raises(TypeError, match=r"max_pool_grad: out must be a numpy array"):
        pooling.max_pool_grad(g, onnx, x_shape, out=[0.0])
    big = np.zeros(g.size * 2 + int(np.prod(x_shape)), np.float32)
    with pytest.raises(ValueError, match=r"max_pool_grad: out must not overlap the input grad_y"):
        pooling.max_pool_grad(big[:g.size].reshape(g.shape), onnx, x_shape,
                              out=big[:int(np.prod(x_shape))].reshape(x_shape))


@pytest.mark.parametrize("fmt, limit", [("onnx", 2 * 3 * 16), ("plane", 16), ("tf", 48), ("tf_batch", 96)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_index_out_of_range(fmt, limit, layout):
    shape = (2, 3, 2, 2) if layout == "NCHW" else (2, 2, 2, 3)
    x_shape = (2, 3, 4, 4) if layout == "NCHW" else (2, 4, 4, 3)
    g = np.ones(shape, np.float32)
    for bad in (limit, -2, 2**62):
        idx = np.zeros(shape, np.int64)
        idx[1, 1, 0, 1] = bad
        idx[1, 1, 1, 1] = limit + 1
        for nt in (1, 2):
            with pytest.raises(ValueError, match=rf"max_pool_grad: indices\[1, 1, 0, 1\] = {bad} is outside "
                                                 rf"\[0, {limit}\), the range of '{fmt}' indices"):
                pooling.max_pool_grad(g, idx, x_shape, index_format=fmt, layout=layout, n_threads=nt)


@pytest.mark.parametrize("fmt, limit", [("onnx", 48), ("plane", 16), ("tf", 48), ("tf_batch", 48)])
def test_index_out_of_range_in_bands_of_rows(fmt, limit, monkeypatch):
    """NHWC with one image cut into bands of rows (SPEC 5: the first bad index is named)."""
    import pooling._threads
    import pooling.maxpool_grad as grad_module
    monkeypatch.setattr(grad_module, "_BAND_ROWS", 1)
    monkeypatch.setattr(pooling._threads, "SERIAL_BELOW", 0)
    g = np.ones((1, 2, 2, 3), np.float32)
    for bad in (limit, -2, 2**62):
        idx = np.zeros(g.shape, np.int64)
        idx[0, 1, 0, 1] = bad
        idx[0, 1, 1, 2] = limit + 1
        for nt in (2, 3):
            with pytest.raises(ValueError, match=rf"max_pool_grad: indices\[0, 1, 0, 1\] = {bad} is outside "
                                                 rf"\[0, {limit}\), the range of '{fmt}' indices"):
                pooling.max_pool_grad(g, idx, (1, 4, 4, 3), index_format=fmt, layout="NHWC", n_threads=nt)


def test_errors():
    g = np.ones((1, 2, 2, 2), np.float32)
    i = np.zeros((1, 2, 2, 2), np.int64)
    with pytest.raises(ValueError, match=r"max_pool_grad: indices must have the shape of grad_y \[1, 2, 2, 2\]"):
        pooling.max_pool_grad(g, i[..., :1], (1, 2, 4, 4))
    with pytest.raises(ValueError, match=r"max_pool_grad: grad_y of shape \[1, 2, 2, 2\] does not fit x_shape "
                                         r"\[1, 3, 4, 4\]"):
        pooling.max_pool_grad(g, i, (1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"does not fit x_shape \[1, 2, 4, 4, 4\]"):
        pooling.max_pool_grad(g, i, (1, 2, 4, 4, 4))
    with pytest.raises(ValueError, match=r"max_pool_grad: index_format must be one of"):
        pooling.max_pool_grad(g, i, (1, 2, 4, 4), index_format="torch")
    with pytest.raises(ValueError, match=r"max_pool_grad: layout must be one of"):
        pooling.max_pool_grad(g, i, (1, 2, 4, 4), layout="nchw")
    with pytest.raises(ValueError, match=r"max_pool_grad: x must have rank >= 3"):
        pooling.max_pool_grad(g[0, 0], i[0, 0], (2, 4))
    with pytest.raises(TypeError, match=r"max_pool_grad: grad_y has dtype int32, which is not supported"):
        pooling.max_pool_grad(g.astype(np.int32), i, (1, 2, 4, 4))
    with pytest.raises(TypeError, match=r"max_pool_grad: indices must be an array of integers, got dtype float32"):
        pooling.max_pool_grad(g, g, (1, 2, 4, 4))
    with pytest.raises(TypeError, match=r"max_pool_grad: x_shape"):
        pooling.max_pool_grad(g, i, None)
    with pytest.raises(ValueError, match=r"max_pool_grad: n_threads must be non-zero"):
        pooling.max_pool_grad(g, i, (1, 2, 4, 4), n_threads=0)
    with pytest.raises(ValueError, match=r"max_pool_grad: indices\[0, 0, 0, 0\] = 18446744073709551615 is past"):
        pooling.max_pool_grad(g, np.full(i.shape, 2**64 - 1, np.uint64), (1, 2, 4, 4))


def test_empty_and_zero_size():
    # No windows: zeros of x's shape.
    got = pooling.max_pool_grad(np.ones((1, 2, 0, 3), np.float32), np.ones((1, 2, 0, 3), np.int64), (1, 2, 4, 4))
    assert_same(got, np.zeros((1, 2, 4, 4), np.float32))
    # An empty x: only -1 (empty windows) can be read.
    g = np.ones((1, 2, 2), np.float16)
    assert_same(pooling.max_pool_grad(g, np.full((1, 2, 2), -1), (1, 2, 0)), np.zeros((1, 2, 0), np.float16))
    with pytest.raises(ValueError, match=r"max_pool_grad: indices\[0, 1, 0\] = 0 is outside \[0, 0\)"):
        pooling.max_pool_grad(g, np.array([[[-1, -1], [0, -1]]]), (1, 2, 0))
    assert pooling.max_pool_grad(np.ones((0, 2, 2)), np.ones((0, 2, 2), np.int8), (0, 2, 9)).shape == (0, 2, 9)
    with pytest.raises(ValueError, match=r"max_pool_grad: n_threads must be non-zero"):
        pooling.max_pool_grad(np.ones((0, 2, 2)), np.ones((0, 2, 2), np.int8), (0, 2, 9), n_threads=0)


def test_large_fresh_results_come_zeroed(rng):
    """Results of 32 MiB and more come from calloc and are not zeroed again by the kernel; the
    ordered pass (an index into another plane) still starts from zeros."""
    x_shape = (1, 2, 2048, 2048)                              # 32 MiB of float32
    g = rng.standard_normal((1, 2, 1024, 1024)).astype(np.float32)
    idx = (np.arange(2).reshape(1, 2, 1, 1) * 2048 * 2048
           + rng.integers(0, 2048 * 2048, size=g.shape))
    want = reference.max_pool_grad(g, idx, x_shape)
    assert_same(pooling.max_pool_grad(g, idx, x_shape, n_threads=2), want)
    idx[0, 0, 0, 0] = 2048 * 2048 + 5                         # into plane 1
    assert_same(pooling.max_pool_grad(g, idx, x_shape, n_threads=2), reference.max_pool_grad(g, idx, x_shape))


def test_large_plane_count_threads_agree(rng):
    """Many planes over several threads, float16: each plane's float32 scratch is per thread."""
    g, onnx, x_shape = _case(rng, "float16", "NCHW", 2, shape=(4, 40, 9, 9))
    want = reference.max_pool_grad(g, onnx, x_shape)
    for nt in (1, 2, 5):
        assert_same(pooling.max_pool_grad(g, onnx, x_shape, n_threads=nt), want)


@pytest.mark.parametrize("build", ["pooling._core", "pooling._core_avx2", "pooling._core_avx512"])
def test_kernel_contract(build):
    """The kernel refuses arguments that break its contract (-2), writing nothing."""
    import importlib
    from pooling._runtime import cpu_supports_avx2, cpu_supports_avx512
    runs = {"pooling._core_avx2": cpu_supports_avx2, "pooling._core_avx512": cpu_supports_avx512}
    if not runs.get(build, lambda: True)():  # a module compiled for instructions this CPU lacks
        pytest.skip(f"this CPU cannot run {build}")
    try:
        core = importlib.import_module(build)
    except ImportError:
        pytest.skip(f"{build} is not built for this CPU")
    kernel = core.max_pool_grad
    g, i = np.ones(4, np.float32), np.zeros(4, np.int64)
    y = np.full(8, 7.0, np.float32)
    for args in [(g, i[:3], y, None, 2, 1, 4, 1, 0, 4, 0, False, 1),      # indices not of g's size
                 (g, i, y[:0], None, 1, 1, 4, 1, 0, 4, 0, False, 1),       # an empty result
                 (g, i, y, None, 3, 1, 4, 1, 0, 4, 0, False, 1),           # parts that do not divide
                 (g, i, y, None, 2, 1, 4, 1, 0, 4, 0, False, 0)]:          # no threads
        assert kernel["float"](*args) == -2
        assert (y == 7.0).all()
    h, yh = np.ones(4, np.uint16), np.zeros(8, np.uint16)
    assert kernel["uint16_t"](h, i, yh, None, 2, 1, 4, 1, 0, 4, 0x7C00, False, 1) == -2   # no scratch
    assert kernel["uint16_t"](h, i, yh, np.empty((1, 3), np.float32), 2, 1, 4, 1, 0, 4, 0x7C00, False,
                              1) == -2
    assert kernel["float"](g, i, y, None, 2, 1, 4, 1, 0, 4, 0, False, 2) == 1      # "onnx": 0 is not in part 1
    assert kernel["float"](g, i, y, None, 2, 1, 4, 1, 0, 0, 0, False, 2) == 0      # "plane"
    assert y.tolist() == [2.0, 0, 0, 0, 2.0, 0, 0, 0]


def test_fuzz_against_the_twin():
    """hypothesis: shapes (empty ones included), layouts, formats, dtypes, thread counts, indices from
    max_pool or anywhere in x (other planes, duplicates, -1) and now and then one out of range: the
    twin's bits, or the same ValueError naming max_pool_grad."""
    pytest.importorskip("hypothesis")
    from hypothesis import given, strategies as st
    from conftest import fuzz_settings

    @st.composite
    def calls(draw):
        rank = draw(st.integers(1, 3))
        layout = draw(st.sampled_from(["NCHW", "NHWC"]))
        kind = draw(st.sampled_from(FLOAT_KINDS))
        fmt = draw(st.sampled_from(FORMATS))
        nchw = (draw(st.integers(0, 3)), draw(st.integers(0, 4))) + tuple(
            draw(st.integers(0, 7)) for _ in range(rank))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        x = make_array(rng, nchw, kind)
        if layout == "NHWC":
            x = to_nhwc(x)
        k, s, p = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
        try:
            y, idx = pooling.max_pool(x, k, strides=s, pads=p, layout=layout, return_indices=True,
                                      index_format=fmt)
        except ValueError:  # (an output size below 0)
            y, idx = pooling.max_pool(x, 1, layout=layout, return_indices=True, index_format=fmt)
        if draw(st.booleans()) and x.size:  # indices made elsewhere: anywhere in their format's range
            limit = {"onnx": x.size, "tf_batch": x.size, "plane": int(np.prod(nchw[2:])),
                     "tf": int(np.prod(nchw[2:])) * nchw[1]}[fmt]
            idx = rng.integers(-1, limit, size=idx.shape) if limit else np.full(idx.shape, -1)
        if draw(st.integers(0, 9)) == 0 and idx.size:
            idx.flat[draw(st.integers(0, idx.size - 1))] = draw(st.sampled_from([-2, x.size + 1, 2**62]))
        g = to_dtype(rng.standard_normal(y.shape) * 8, kind)
        return g, idx, x.shape, dict(index_format=fmt, layout=layout), draw(st.integers(1, 4))

    @fuzz_settings(150)
    @given(calls())
    def check(call):
        g, idx, x_shape, kw, nt = call
        try:
            want = reference.max_pool_grad(g, idx, x_shape, **kw)
        except ValueError:
            with pytest.raises(ValueError, match=r"^max_pool_grad: indices\["):
                pooling.max_pool_grad(g, idx, x_shape, n_threads=nt, **kw)
            return
        assert_same(pooling.max_pool_grad(g, idx, x_shape, n_threads=nt, **kw), want)

    check()


def test_indices_off_their_alignment_reach_the_kernel_aligned():
    """The kernels load Indices as int64_t: an int64 array one byte off its alignment (contiguous, so
    numpy would pass it on as it is) is copied, for max_pool_grad and convert_indices alike; the
    results are those of the aligned array."""
    from conftest import unaligned
    from pooling.indices import as_int64

    x = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
    y, idx = pooling.max_pool(x, (2, 2), strides=(2, 2), return_indices=True)
    off = unaligned(idx)
    assert not off.flags.aligned and off.flags.c_contiguous
    fixed = as_int64("MaxPoolGrad", "indices", off)
    assert fixed.flags.aligned and fixed.flags.c_contiguous and fixed.dtype == np.int64
    np.testing.assert_array_equal(fixed, idx)
    g = np.ones_like(y)
    np.testing.assert_array_equal(pooling.max_pool_grad(g, off, x.shape), pooling.max_pool_grad(g, idx, x.shape))


def _windows_kernel(build):
    """max_pool_grad_windows of kernel build `build`, or a skip where this CPU cannot run it."""
    import importlib
    from pooling._runtime import cpu_supports_avx2, cpu_supports_avx512
    runs = {"pooling._core_avx2": cpu_supports_avx2, "pooling._core_avx512": cpu_supports_avx512}
    if not runs.get(build, lambda: True)():
        pytest.skip(f"this CPU cannot run {build}")
    try:
        return importlib.import_module(build).max_pool_grad_windows
    except ImportError:
        pytest.skip(f"{build} is not built for this CPU")


BUILDS = ["pooling._core", "pooling._core_avx2", "pooling._core_avx512"]


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_windows_gathered_equal_the_scatter(build, dtype, rank, rng):
    """pooling.torch's backward gathered from the windows over each element of dx (windows that overlap
    or not, gaps between them, pads, ceil_mode; channels from 1 to past four vectors): the scatter's bits
    exactly (-0.0 and NaN gradients too), at 1-3 threads, in every kernel build, and the twin's."""
    kernel_of = _windows_kernel(build)
    from pooling.maxpool_grad import _grad_windows
    for _ in range(40):
        kernel = tuple(int(k) for k in rng.integers(1, 5, rank))
        strides = tuple(max(1, k + int(rng.integers(-3, 3))) for k in kernel)
        pads = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        x = rng.integers(-3, 4, (int(rng.integers(1, 3)), *rng.integers(1, 10, rank), int(rng.integers(1, 80))))
        x = x.astype(dtype)
        try:
            _, i = pooling.max_pool(x, kernel, strides=strides, pads=pads * 2, ceil_mode=bool(rng.integers(0, 2)),
                                    layout="NHWC", return_indices=True, index_format="plane")
        except ValueError:  # a window past the input
            continue
        g = rng.standard_normal(i.shape).astype(dtype)
        g[rng.random(i.shape) < 0.1] = -0.0
        # NaNs of several payloads and signs: a sum keeps its first operand's, so the order shows
        bits = g.view(np.uint32 if dtype == np.float32 else np.uint64)
        nans = rng.random(i.shape) < 0.05
        top = 0x7FC00000 if dtype == np.float32 else 0x7FF8000000000000
        bits[nans] = top | rng.integers(1, 1 << 20, nans.sum()).astype(bits.dtype)
        bits[nans & (rng.random(i.shape) < 0.5)] |= bits.dtype.type(1) << bits.dtype.type(8 * bits.itemsize - 1)
        want = pooling.max_pool_grad(g, i, x.shape, layout="NHWC", index_format="plane")
        assert_same(want, reference.max_pool_grad(g, i, x.shape, layout="NHWC", index_format="plane"))
        pad = (1,) * (3 - rank)
        for nt in (1, 2, 3):
            if build == "pooling._core":
                assert _grad_windows(g, i, x.shape, kernel, strides, pads, nt).tobytes() == want.tobytes()
            y = np.full(x.shape, 7, dtype)
            five = (len(x),) + pad + x.shape[1:]
            assert kernel_of(g.reshape((len(g),) + pad + g.shape[1:]), i.reshape((len(g),) + pad + g.shape[1:]),
                             y.reshape(five), pad + kernel, pad + strides, (0,) * (3 - rank) + pads, nt) == 0
            assert y.tobytes() == want.tobytes()


def test_windows_kernel_compares_indices_and_never_follows_them(rng):
    """An index outside its own window (or out of range, or -1) is a term left out; no write lands
    outside dx whatever the indices hold."""
    from pooling.maxpool_grad import _grad_windows
    x = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    _, i = pooling.max_pool(x, 2, strides=2, layout="NHWC", return_indices=True, index_format="plane")
    g = rng.standard_normal(i.shape).astype(np.float32)
    odd = i.copy()
    odd[0, 0, 0, :3] = [35, -1, 10**12]  # another window's pixel, none, far out of range
    kept = odd.copy()
    kept[0, 0, 0, :3] = -1
    want = pooling.max_pool_grad(g, kept, x.shape, layout="NHWC", index_format="plane")
    assert _grad_windows(g, odd, x.shape, (2, 2), (2, 2), (0, 0), 2).tobytes() == want.tobytes()


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("kernel", [(1, 1, 64), (1, 2, 32), (1, 8, 8), (4, 4, 4)])
def test_windows_kernel_at_its_most_windows(build, kernel):
    """64 windows over the middle pixel (stride 1), as many as the windows' lists along a row allow: one
    row of windows 64 wide, 2 rows of 32, 8 of 8 and a 3-D 4x4x4: the scatter's bits."""
    kernel_of = _windows_kernel(build)
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (1, *(2 * k - 1 for k in kernel), 5)).astype(np.float32)
    _, i = pooling.max_pool(x, kernel, layout="NHWC", return_indices=True, index_format="plane")
    g = rng.standard_normal(i.shape).astype(np.float32)
    want = pooling.max_pool_grad(g, i, x.shape, layout="NHWC", index_format="plane")
    y = np.full(x.shape, 7.0, np.float32)
    assert kernel_of(g, i, y, kernel, (1, 1, 1), (0, 0, 0), 2) == 0
    assert y.tobytes() == want.tobytes()


@pytest.mark.parametrize("build", BUILDS)
def test_windows_kernel_contract(build):
    """max_pool_grad_windows refuses (-2, writing nothing) more windows over one pixel than its list
    holds, shapes that disagree, 16-bit floats and no threads."""
    windows = _windows_kernel(build)
    kernel = {"float": windows["float"], "uint16_t": windows["uint16_t"]}
    g, i = np.ones((1, 1, 2, 2, 3), np.float32), np.zeros((1, 1, 2, 2, 3), np.int64)
    y = np.full((1, 1, 4, 4, 3), 7.0, np.float32)
    for args in [(g, i, y, (1, 5, 13), (1, 1, 1), (0, 1, 1), 1),         # 65 windows over a pixel
                 (g, i[:, :, :1], y, (1, 2, 2), (1, 2, 2), (0, 0, 0), 1),  # indices not of g's shape
                 (g, i, np.full((1, 1, 4, 4, 2), 7.0, np.float32), (1, 2, 2), (1, 2, 2), (0, 0, 0), 1),  # C
                 (g, i, y, (1, 2), (1, 2), (0, 0), 1),                      # not three axes
                 (g, i, y, (1, 2, 2), (1, 2, 2), (0, -1, 0), 1),           # a negative pad
                 (g, i, y, (1, 2, 2), (1, 2, 2), (0, 2, 0), 1),            # a pad as wide as the kernel
                 (g, i, y, (1, 1, 1), (1, 1, 1), (0, 2**63 - 1, 0), 1),    # pixels plus pads overflow
                 (g, i, y, (1, 2, 2), (1, 2**62, 2), (0, 0, 0), 1),        # window starts overflow
                 (g, i, y, (1, 2, 2), (1, 2, 2), (0, 0, 0), 0)]:           # no threads
        assert kernel["float"](*args) == -2
        assert (args[2] == 7.0).all()
    h = np.ones((1, 1, 2, 2, 3), np.uint16)
    assert kernel["uint16_t"](h, i, np.zeros((1, 1, 4, 4, 3), np.uint16), (1, 2, 2), (1, 2, 2), (0, 0, 0), 1) == -2
    # No row of windows (an empty axis of g, the others not): dx is zeros.
    empty = np.full_like(y, 7.0)
    assert kernel["float"](g[:, :, :0], i[:, :, :0], empty, (1, 2, 2), (1, 2, 2), (0, 0, 0), 2) == 0
    assert not empty.any()
    most = np.full_like(y, 7.0)
    assert kernel["float"](g, i, most, (1, 8, 8), (1, 1, 1), (0, 1, 1), 1) == 0  # 64 windows: its list's room
    assert not (most == 7.0).any()
    assert kernel["float"](g, i, y, (1, 2, 2), (1, 2, 2), (0, 0, 0), 2) == 0
    # Every index names pixel 0, which only the first window covers: the other windows' terms are left out.
    assert y[0, 0, 0, 0].tolist() == [1.0] * 3 and y.sum() == 3.0
