"""Every MaxPool strategy, forced, against the numpy twin; and the chooser's picks.

The default chooser reaches each strategy only on some shapes, so a change of its thresholds could
silently stop a strategy from being tested. Here each unit of `_maxpool_strategies.ORDER` is forced
through ``_strategy=`` on every dtype, layout, rank and Indices setting its own `serves` admits among
a set of candidate geometries (the matrix is derived from the units, and must cover what docs/design.md
promises); and `test_the_chooser_picks_each_strategy` pins a representative case of each, so coverage
cannot drop without a test failing.
"""
import numpy as np
import pytest

import pooling
from conftest import POOL_DTYPES, assert_same, each_position, for_kind, make_array, to_dtype, to_nhwc
from pooling import _dispatch, _maxpool_strategies, _tuning, maxpool, reference
from pooling._dtypes import KINDS
from pooling._maxpool_strategies import Strategy, choose_strategy, launch, serves

S = Strategy
# What each strategy must at least serve, (layouts, spatial ranks, with Indices too), as docs/design.md
# promises: the matrix below is derived from the units' own `serves`, and must cover this.
PROMISED = {
    S.NHWC: (("NHWC",), (1, 2, 3), True),
    S.NHWC_TRANSPOSED: (("NHWC",), (1, 2, 3, 4), True),
    S.FUSED: (("NCHW",), (1, 2, 3), True),
    S.PLANES: (("NCHW",), (1, 2), False),
    S.INTERLEAVED: (("NCHW",), (1, 2), False),
    S.DEPTH_FIRST: (("NCHW",), (3,), False),
    S.DEPTH_SPLIT: (("NCHW",), (3,), True),
    S.SEPARABLE: (("NCHW",), (1, 2, 3, 4), True),
    S.TILES: (("NCHW",), (1, 2, 3), False),
    S.ROWS_FIRST: (("NCHW",), (1, 2), False),
    S.NARROW: (("NCHW",), (1, 2), False),
    S.NHWC_BLOCKS: (("NHWC",), (1, 2, 3), False),
}


def _attrs(rank):
    """A few attribute sets per rank: overlapping strided windows with pads, dilation, ceil_mode
    with an activation and a window wider than the stride on the first axis only, and a window of
    one on the first axis."""
    return [
        dict(kernel_shape=(3,) * rank, strides=(2,) * rank, pads=(1,) * (2 * rank)),
        dict(kernel_shape=(2,) * rank, dilations=(2,) + (1,) * (rank - 1), pads=(0, 1) * rank),
        dict(kernel_shape=(3,) + (2,) * (rank - 1), strides=(1,) + (2,) * (rank - 1), ceil_mode=True,
             activation="Clip", activation_params=(-1.5, 2.0)),
        dict(kernel_shape=(1,) + (3,) * (rank - 1), strides=(2,) + (1,) * (rank - 1)),
    ]


def _plan(x_shape, kernel_shape, strides=None, pads=None, layout="NCHW", return_indices=False, **attrs):
    """maxpool._plan with max_pool's defaults for the attributes not given."""
    return maxpool._plan(x_shape, kernel_shape=kernel_shape, strides=strides, pads=pads, layout=layout,
                         return_indices=return_indices, **dict(dict(
                             dilations=None, auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                             activation=None, activation_params=None, opset=None, index_format="onnx"), **attrs))


def _candidates(rank):
    """(NCHW shape, attributes) to try each unit on: the general sets on small planes, and the
    geometries the specialised kernels need (windows tiling the input, rows of 8 and more, narrow
    same-shape planes, 16 channels for channels-last blocks, a depth kernel over 3-D; the strided
    rows are 40 long, so that 16-bit floats have rows of 16 for ROWS_FIRST)."""
    general = [((2, 3) + (7, 6, 5, 4)[:rank], attrs) for attrs in _attrs(rank)]
    special = [
        ((2, 3) + (8, 6, 4, 2)[:rank], dict(kernel_shape=(2,) * rank, strides=(2,) * rank)),
        ((1, 3) + _rows(rank, 9, 40), dict(kernel_shape=(3,) * rank, strides=(2,) * rank, pads=(1,) * (2 * rank))),
        ((1, 3) + _rows(rank, 7, 10), dict(kernel_shape=(3,) * rank, pads=(1,) * (2 * rank))),
        # rows of 3: NARROW's in every build, one-lane ones included (PK_SIMD_SCALAR, MSVC)
        ((1, 3) + _rows(rank, 5, 3), dict(kernel_shape=(3,) * rank, pads=(1,) * (2 * rank))),
        ((1, 16) + (7, 6, 5, 4)[:rank], dict(kernel_shape=(3,) * rank, strides=(2,) * rank,
                                             pads=(1,) * (2 * rank))),
    ]
    return general + special


def _rows(rank, height, width):
    """Spatial dims of `rank` axes ending in height x width rows (1-D: one row of `width`)."""
    return ((4,) * (rank - 2) + (height, width))[-rank:]


def _matrix():
    """{(strategy, kind, layout, rank, indices): [(shape, attrs), ...]}: every combination some
    candidate of which the unit serves, derived from `pooling._maxpool_strategies.ORDER` itself."""
    matrix = {}
    for unit in _maxpool_strategies.ORDER:
        for kind in POOL_DTYPES:
            for layout in ("NCHW", "NHWC"):
                for rank in (1, 2, 3, 4):
                    for indices in (False, True):
                        for shape, attrs in _candidates(rank):
                            x_shape = shape if layout == "NCHW" else (shape[0],) + shape[2:] + (shape[1],)
                            attrs = dict(attrs, layout=layout, return_indices=indices)
                            if unit.serves(_plan(x_shape, **attrs), kind, indices):
                                matrix.setdefault((unit.strategy, kind, layout, rank, indices), []).append(
                                    (shape, attrs))
    return matrix


MATRIX = _matrix()


def test_the_matrix_covers_every_strategy_and_what_it_promises():
    """Each unit of ORDER is in the matrix, with every dtype, layout, rank and Indices PROMISED."""
    assert {unit.strategy for unit in _maxpool_strategies.ORDER} == set(Strategy) == set(PROMISED)
    for strategy, (layouts, ranks, with_indices) in PROMISED.items():
        kinds = (["float32", "float16", "bfloat16"] if strategy in (S.NARROW, S.ROWS_FIRST, S.NHWC_BLOCKS)
                 else list(POOL_DTYPES))
        for kind in kinds:
            for layout in layouts:
                for rank in ranks:
                    for indices in (False, True) if with_indices else (False,):
                        assert (strategy, kind, layout, rank, indices) in MATRIX, (strategy, kind, layout, rank,
                                                                                   indices)


@pytest.mark.parametrize("strategy, kind, layout, rank, indices", sorted(MATRIX, key=str),
                         ids=[f"{s.value}-{k}-{lay}-{r}d-{'indices' if i else 'values'}"
                              for s, k, lay, r, i in sorted(MATRIX, key=str)])
def test_every_strategy_against_the_twin(strategy, kind, layout, rank, indices, rng):
    """Each strategy, forced, on every candidate it serves, at one and two threads: the twin's
    result bit for bit (Indices included)."""
    for shape, attrs in MATRIX[(strategy, kind, layout, rank, indices)]:
        attrs = for_kind(attrs, kind)
        x = make_array(rng, shape, kind)
        if layout == "NHWC":
            x = to_nhwc(x)
        want = reference.max_pool(x, **attrs)
        for nt in (1, 2):
            got = pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs)
            if indices:
                assert_same(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1], err_msg=f"{strategy} {attrs} nt={nt}")
            else:
                assert_same(got, want)


CHOOSER_CASES = [
    # NHWC: float32 (and 16-bit floats) without Indices on a vector of channels or more takes NHWC_BLOCKS
    (S.NHWC, _plan((1, 56, 56, 64), 3, 2, 1, "NHWC"), "float32", True),
    (S.NHWC, _plan((1, 56, 56, 64), 3, 2, 1, "NHWC"), "float64", False),
    (S.NHWC, _plan((1, 56, 56, 3), 3, 2, 1, "NHWC"), "float32", False),
    (S.NHWC_BLOCKS, _plan((1, 56, 56, 64), 3, 2, 1, "NHWC"), "float32", False),
    (S.NHWC_BLOCKS, _plan((8, 40, 40, 256), 5, 1, 2, "NHWC"), "float32", False),
    (S.NHWC_BLOCKS, _plan((2, 8, 28, 28, 16), 3, 2, 1, "NHWC"), "float32", False),
    (S.NHWC_BLOCKS, _plan((1, 112, 112, 64), 3, 2, 1, "NHWC"), "float16", False),
    (S.NHWC_BLOCKS, _plan((8, 40, 40, 256), 5, 1, 2, "NHWC"), "bfloat16", False),
    (S.NHWC_TRANSPOSED, _plan((1, 4, 4, 4, 4, 2), 2, layout="NHWC"), "float32", False),
    (S.FUSED, _plan((1, 64, 112, 112), 3, 2, 1), "float64", False),
    (S.PLANES, _plan((1, 256, 80, 80), 5, 1, 2), "float32", False),
    (S.PLANES, _plan((1, 512, 19, 19), 9, 1, 4), "float32", False),
    (S.PLANES, _plan((1, 2048, 7, 7), 7, 7), "float16", False),
    (S.FUSED, _plan((2, 32, 32, 56, 56), 3, 2, 1, return_indices=True), "float32", True),
    (S.DEPTH_FIRST, _plan((2, 32, 32, 56, 56), 3, 2, 1), "uint8", False),
    # 16-bit floats: DEPTH_FIRST only where ROWS_FIRST cannot pool the depth slices (rows under 8)
    (S.DEPTH_SPLIT, _plan((2, 32, 32, 56, 56), 3, 2, 1), "float16", False),
    (S.DEPTH_FIRST, _plan((2, 32, 32, 14, 14), 3, 2, 1), "bfloat16", False),
    (S.TILES, _plan((2, 16, 32, 48, 48), 2, 2), "float16", False),
    (S.DEPTH_FIRST, _plan((2, 16, 32, 14, 14), 2, 2), "float16", False),
    # the 2-byte integers as 16-bit floats: label volumes' k2 s2 in TILES' one pass, k3 s2 split
    (S.TILES, _plan((1, 1, 96, 256, 256), 2, 2), "uint16", False),
    (S.DEPTH_SPLIT, _plan((2, 32, 32, 56, 56), 3, 2, 1), "int16", False),
    (S.DEPTH_FIRST, _plan((2, 32, 32, 14, 14), 3, 2, 1), "uint16", False),
    (S.ROWS_FIRST, _plan((8, 64, 112, 112), 3, 2, 1), "int32", False),
    (S.ROWS_FIRST, _plan((8, 64, 112, 112), 3, 2, 1), "uint16", False),
    (S.DEPTH_SPLIT, _plan((2, 32, 32, 56, 56), 3, 2, 1), "float32", False),
    (S.DEPTH_SPLIT, _plan((2, 32, 32, 56, 56), 3, 2, 1, return_indices=True), "uint8", True),
    (S.SEPARABLE, _plan((1, 2, 4, 4, 4, 4), 2), "float32", False),
    # One output row's window too wide for the row ring: SEPARABLE; a rank-1 call with a kernel
    # wider than the input stays FUSED.
    (S.SEPARABLE, _plan((1, 1, 3, 1 << 22), (3, 3), None, None), "float32", False),
    (S.FUSED, _plan((1, 2, 5), 9, 1, 4), "int8", True),
    # Windows that tile the input: TILES, but not with Indices, nor a W kernel of 4, nor a
    # whole-plane window (PLANES), nor where DEPTH_FIRST's 1- and 2-byte rule comes first.
    (S.TILES, _plan((1, 512, 14, 14), 2, 2), "float32", False),
    (S.TILES, _plan((2, 16, 32, 48, 48), 2, 2), "float32", False),
    (S.TILES, _plan((16, 256, 1024), 2, 2), "bfloat16", False),
    (S.FUSED, _plan((1, 512, 14, 14), 2, 2, return_indices=True), "float32", True),
    (S.FUSED, _plan((1, 64, 128, 128), 4, 4), "float64", False),
    (S.ROWS_FIRST, _plan((1, 64, 128, 128), 4, 4), "float32", False),
    (S.DEPTH_FIRST, _plan((2, 32, 32, 56, 56), 2, 2), "uint8", False),
    (S.TILES, _plan((2, 32, 32, 56, 56), 2, 2), "float64", False),
    (S.FUSED, _plan((1, 8, 12, 12), (2, 1), (2, 1)), "float64", False),   # W kernel 1: not measured
    # Planes of at most 64 values: INTERLEAVED, but not windows that tile them (TILES) nor
    # whole-plane windows (PLANES), nor with Indices, nor on larger planes.
    (S.INTERLEAVED, _plan((1, 832, 7, 7), 3, 1, 1), "float64", False),
    (S.NARROW, _plan((1, 832, 7, 7), 3, 1, 1), "float16", False),
    (S.INTERLEAVED, _plan((1, 2048, 6, 6), 3, 1), "float32", False),
    (S.INTERLEAVED, _plan((4, 96, 8, 8), 3, 2, 1), "uint8", False),
    (S.INTERLEAVED, _plan((8, 64, 60), 3, 2), "float16", False),
    (S.TILES, _plan((1, 600, 8, 8), 2, 2), "float32", False),
    (S.FUSED, _plan((1, 832, 7, 7), 3, 1, 1, return_indices=True), "float32", True),
    (S.PLANES, _plan((1, 400, 10, 10), 3, 1, 1), "uint8", False),
    # float32 and 16-bit float 2-D windows up to 3x3 (stride 1, or 2 with a 2- or 3-wide window) on
    # rows of 8 or more (16 for 16-bit floats): ROWS_FIRST; not with Indices, other dtypes, wider
    # windows, short rows, 1-D, or where the windows tile the input (TILES).
    (S.ROWS_FIRST, _plan((1, 64, 112, 112), 3, 2, 1), "float32", False),
    (S.ROWS_FIRST, _plan((1, 480, 28, 28), 3, 2, ceil_mode=True), "float32", False),
    (S.ROWS_FIRST, _plan((1, 192, 56, 56), 3, 1, 1), "float32", False),
    (S.ROWS_FIRST, _plan((1, 512, 34, 34), 2, 1, (0, 0, 1, 1)), "float32", False),  # (k2: NARROW to two vectors)
    (S.ROWS_FIRST, _plan((1, 64, 56, 56), 3, 1, 2, dilations=(2, 2)), "float32", False),
    (S.FUSED, _plan((1, 64, 112, 112), 3, 2, 1, return_indices=True), "float32", True),
    (S.ROWS_FIRST, _plan((1, 64, 112, 112), 3, 2, 1), "float16", False),
    (S.ROWS_FIRST, _plan((1, 96, 109, 109), 3, 2, ceil_mode=True), "bfloat16", False),
    (S.NARROW, _plan((1, 256, 16, 16), 5, 1, 2), "float16", False),   # (two vectors of every build)
    (S.NARROW, _plan((1, 256, 24, 24), 5, 1, 2), "float16", False),   # (three of the baseline's: a k5 window)
    (S.PLANES, _plan((1, 256, 56, 56), 5, 1, 2), "float16", False),   # (past three vectors of every build)
    (S.FUSED, _plan((1, 64, 112, 112), 3, 3, 1), "float32", False),
    (S.TILES, _plan((1, 64, 112, 112), 2, 2), "float32", False),
    # float32 planes of rows that fit one vector (4 values in every build), stride 1 and an
    # output of the input's shape: NARROW; not with Indices, other dtypes, or a smaller output.
    (S.NARROW, _plan((1, 256, 4, 4), 3, 1, 1), "float32", False),
    (S.NARROW, _plan((1, 1024, 4, 4), 2, 1, (0, 0, 1, 1)), "float32", False),
    (S.NARROW, _plan((1, 64, 100, 4), 3, 1, 1), "float32", False),
    (S.FUSED, _plan((1, 256, 4, 4), 3, 1, 1, return_indices=True), "float32", True),
    (S.INTERLEAVED, _plan((1, 256, 4, 4), 3, 1, 1), "float64", False),
    (S.ROWS_FIRST, _plan((1, 512, 8, 8), 3, (2, 1), 1), "float32", False),
    (S.FUSED, _plan((8, 128, 4000), 3, 2, 1), "float32", False),
    # A batch's scratch past the limit (one row of a 2**24-wide 1-D input): not TILES.
    (S.SEPARABLE, _plan((1, 1, 1 << 24), 2, 2), "float32", False),
]


# TILES' paths: ranks 1-3; W kernels 1, 2 (the paired loop) and 3; H kernels 1 to 3; depth
# kernels 1 and 2; H rows of 8 or fewer; batches of one output row (wide rows); 3-D batches of a whole depth slab
# (slices of at most 32 KB) and of one row of it (wider slices); a fused activation; padding no window reads.
TILES_CASES = [
    ((2, 3, 8, 8), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 5, 12, 9), dict(kernel_shape=(4, 3), strides=(4, 3))),
    ((1, 5, 12, 8), dict(kernel_shape=(3, 2), strides=(3, 2), activation="Relu")),
    ((1, 5, 12, 8), dict(kernel_shape=(2, 1), strides=(2, 1))),
    ((2, 3, 6), dict(kernel_shape=(2,), strides=(2,))),
    ((2, 3, 9), dict(kernel_shape=(3,), strides=(3,), pads=(0, 2))),
    ((1, 2, 6, 1024), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 2, 4, 6, 512), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    ((1, 1, 4, 6, 2048), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    ((2, 3, 4, 6, 8), dict(kernel_shape=(1, 2, 2), strides=(1, 2, 2),
                           activation="Clip", activation_params=(-0.5, 1.0))),
    ((1, 3, 6, 6, 6), dict(kernel_shape=(3, 3, 1), strides=(3, 3, 1))),
    # rows of 4 to 8 combined along H 8 values at a time (VGG's pool5), before depth taps; rows
    # of 1 to 3, too short for that, and rows of 9
    ((2, 3, 4, 10, 14), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    ((1, 3, 10, 2), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 3, 10, 6), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 3, 10, 18), dict(kernel_shape=(2, 2), strides=(2, 2))),
    # float32 2x2 and 2x2x2 windows in one pass over rows of at least a vector: whole vectors,
    # a last vector overlapping the one before it (OW 9 to 15), rows of exactly one vector
    ((1, 3, 10, 16), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((2, 3, 4, 6, 26), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    ((1, 2, 6, 4, 30), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2), activation="Relu")),
    # the same for 16-bit floats (16 lanes): rows of exactly one vector, a last vector overlapping
    # (OW 17, 25), whole vectors and a remainder
    ((1, 3, 4, 32), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 3, 6, 34), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((2, 2, 4, 6, 50), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2), activation="Relu")),
    ((1, 2, 8, 72), dict(kernel_shape=(2, 2), strides=(2, 2), activation="Clip", activation_params=(-0.5, 1.0))),
]


def test_tiles_batches_whole_depth_slices_up_to_32_kb():
    """TILES' batches (output rows): with depth taps, every output row of a depth slab where a
    slice is at most four chunks, else about a chunk of input per tap (a quarter of L1d: 8 KB with
    the tests' 32 KiB)."""
    from pooling._maxpool_strategies import _tiles_rows
    assert _tiles_rows(_plan((1, 128, 16, 56, 56), 2, 2), "float32") == 28      # C3D's pool2: 12.5 KB
    assert _tiles_rows(_plan((1, 1, 4, 6, 512), 2, 2), "float32") == 3
    assert _tiles_rows(_plan((1, 1, 4, 6, 2048), 2, 2), "float32") == 1         # 48 KB: 8 KB of rows
    assert _tiles_rows(_plan((1, 64, 16, 112, 112), 2, 2), "float32") == 9      # 50 KB
    assert _tiles_rows(_plan((8, 256, 56, 56), 2, 2), "float32") == 18          # 2-D: 8 KB of rows


@pytest.mark.parametrize("shape, attrs", [
    ((1, 2, 8, 8), dict(kernel_shape=(2, 2))),                                   # stride 1
    ((1, 2, 9, 8), dict(kernel_shape=(2, 2), strides=(2, 2))),                   # a row left over
    ((1, 2, 8, 8), dict(kernel_shape=(2, 2), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 2, 8, 8), dict(kernel_shape=(2, 2), strides=(2, 2), dilations=(2, 1))),
    ((1, 2, 7, 8), dict(kernel_shape=(2, 2), strides=(2, 2), ceil_mode=True)),   # a partial window
    ((1, 2, 0, 8), dict(kernel_shape=(1, 2), strides=(1, 2))),                   # empty
])
def test_tiles_serves_only_windows_that_tile_the_input(shape, attrs):
    assert not serves(S.TILES, _plan(shape, **attrs), "float32", False)
    if 0 not in shape:  # (an empty result is returned before any strategy is launched)
        with pytest.raises(ValueError, match="_strategy='tiles' cannot compute this call"):
            pooling.max_pool(np.zeros(shape, np.float32), _strategy="tiles", **attrs)


# One odd value per call in a strategy that redoes a piece of work exactly when it finds one:
# TILES with the value only in depth tap 1 or 2 of its window (the batch is redone after some of
# its rows were written from earlier taps); INTERLEAVED with it in one block of planes (the blocks
# after it, whose padding 16-bit floats hold as fast keys again, stay right at the borders too);
# PLANES' whole-plane reduction, whose NaN check runs in its vector lanes and its remainder.
ODD_CASES = [
    (S.TILES, (1, 2, 6, 4, 6), dict(kernel_shape=(3, 2, 2), strides=(3, 2, 2))),
    (S.TILES, (1, 2, 4, 4, 18), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    (S.TILES, (2, 2, 6, 20), dict(kernel_shape=(2, 2), strides=(2, 2))),
    (S.TILES, (2, 2, 6, 40), dict(kernel_shape=(2, 2), strides=(2, 2))),     # 16-bit floats' one pass too
    (S.TILES, (1, 2, 4, 4, 36), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    (S.INTERLEAVED, (1, 37, 6, 7), dict(kernel_shape=(3, 3), strides=(1, 2), pads=(1, 1, 1, 1))),
    (S.PLANES, (1, 3, 7, 9), dict(kernel_shape=(7, 9))),
    (S.PLANES, (1, 4, 4, 4), dict(kernel_shape=(4, 4))),
    (S.PLANES, (1, 2, 5, 7), dict(kernel_shape=(5, 7))),
    (S.PLANES, (1, 19, 7, 7), dict(kernel_shape=(7, 7))),   # float32's planes reduced eight at a time
]


@pytest.mark.parametrize("kind", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("special", [np.nan, -0.0])
@pytest.mark.parametrize("strategy, shape, attrs", ODD_CASES, ids=[c[0].value for c in ODD_CASES])
def test_one_odd_value_redoes_its_piece_exactly(strategy, shape, attrs, kind, special, rng):
    base = make_array(rng, shape, kind, special=False)
    for flat in rng.choice(base.size, size=12, replace=False):
        x = base.copy()
        x.reshape(-1)[flat] = to_dtype(np.array([special]), kind)[0]
        want = reference.max_pool(x, **attrs)
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs), want)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape, kernel", [((2, 3, 6, 20), (2, 2)), ((1, 2, 4, 6, 18), (2, 2, 2)),
                                           ((2, 3, 6, 40), (2, 2)), ((1, 2, 4, 6, 34), (2, 2, 2)),
                                           ((2, 3, 6, 64), (2, 2)), ((1, 2, 4, 6, 98), (2, 2, 2))])
def test_tiles_one_pass_keeps_the_first_of_equal_zeros(shape, kernel, kind, rng):
    """TILES' one-pass 2x2 and 2x2x2 windows combine W, then H, then depth, each keeping the
    earlier of equal values (float32), or send a batch holding -0.0 to the exact compare (16-bit
    floats' keys tie it with +0.0): windows of -0.0 and +0.0 give the contract's zero, bit for bit."""
    x = to_dtype(rng.choice(np.array([-0.0, 0.0, -1.0], np.float32), size=shape), kind)
    want = reference.max_pool(x, kernel_shape=kernel, strides=kernel)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, kernel_shape=kernel, strides=kernel, n_threads=nt,
                                     _strategy="tiles"), want)


# FUSED's "flat" rows (W == OW * stride) with a W dilation: its long-row pass reads only the
# dilated taps, and the border windows read the values in between, so an odd value there
# must still send the borders through the exact compare (a NaN there was lost).
FLAT_DILATED = [
    ((1, 1, 4, 3, 3), dict(kernel_shape=(4, 1, 2), strides=(2, 4, 1), pads=(2, 0, 1, 2, 0, 1),
                           dilations=(1, 2, 2))),
    ((1, 2, 3, 7), dict(kernel_shape=(1, 2), pads=(0, 1, 0, 1), dilations=(1, 2))),
    ((2, 1, 9), dict(kernel_shape=3, pads=2, dilations=2)),
]


@pytest.mark.parametrize("kind", ["float16", "float32", "float64"])
@pytest.mark.parametrize("special", [np.nan, -0.0])
@pytest.mark.parametrize("indices", [False, True])
@pytest.mark.parametrize("shape, attrs", FLAT_DILATED)
def test_fused_flat_rows_with_w_dilation_check_every_value(shape, attrs, indices, special, kind):
    for flat in range(int(np.prod(shape))):
        x = to_dtype(np.zeros(shape), kind)
        x.reshape(-1)[flat] = to_dtype(np.array([special]), kind)[0]
        want = reference.max_pool(x, return_indices=indices, **attrs)
        got = pooling.max_pool(x, return_indices=indices, _strategy="fused", **attrs)
        if indices:
            assert_same(got[0], want[0])
            assert np.array_equal(got[1], want[1]), flat
        else:
            assert_same(got, want)


@pytest.mark.parametrize("level, kind, expected", [
    ("avx2", "uint8", S.PLANES), ("avx2", "float64", S.FUSED), ("baseline", "uint8", S.FUSED),
])
def test_stride_1_on_planes_up_to_36x36_take_planes_in_the_avx2_build(level, kind, expected,
                                                                     monkeypatch):
    from pooling import _dispatch
    monkeypatch.setattr(_dispatch, "level", level)
    assert choose_strategy(_plan((1, 192, 28, 28), 3, 1, 1), kind, 2, False) is expected
    assert choose_strategy(_plan((1, 288, 36, 36), 2, 1, (0, 0, 1, 1)), kind, 2, False) is expected
    assert choose_strategy(_plan((1, 64, 56, 56), 3, 1, 1), kind, 2, False) is S.FUSED
    assert choose_strategy(_plan((1, 64, 28, 28), 3, 2, 1), kind, 2, False) is S.FUSED


@pytest.mark.parametrize("level", ["avx2", "baseline"])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_16_bit_floats_take_rows_first_where_float32_does(level, kind, monkeypatch):
    """16-bit floats go where float32 goes on ROWS_FIRST's shapes (NARROW's float32 ones too) (docs/tuning.md#rows_first-strategy:
    1.3-2.3x faster than PLANES and FUSED, one exception within 1.15x), rows of 8 to 15 too (16-byte
    vectors: 1.2-2.2x faster), but not NARROW's (for 16-bit floats rows of up to two vectors)."""
    from pooling import _dispatch
    monkeypatch.setattr(_dispatch, "level", level)
    for shape, k, s, p in [((1, 288, 36, 36), 2, 1, (0, 0, 1, 1)), ((1, 64, 56, 56), 3, 1, 1),
                           ((8, 64, 112, 112), 3, 2, 1), ((1, 288, 35, 35), 3, 1, 1)]:
        plan = _plan(shape, k, s, p)
        assert choose_strategy(plan, "float32", 2, False) in (S.ROWS_FIRST, S.NARROW)  # (NARROW: AVX-512)
        assert choose_strategy(plan, kind, 2, False) is S.ROWS_FIRST
    for shape, k, s, p in [((1, 64, 28, 28), 3, 2, 1), ((8, 480, 28, 28), 3, 2, 0),
                           ((1, 512, 13, 13), 2, 1, 0)]:   # OW 14, 13, 12
        assert choose_strategy(_plan(shape, k, s, p), kind, 2, False) is S.ROWS_FIRST


# ROWS_FIRST's paths (float32 and 16-bit floats): stride 2 with 3- and 2-wide windows (the shuffle loop) and
# stride 1 with windows of 1 to 3 and dilation (shifted loads); ceil_mode's partial last window,
# pads up to 2 at either end, odd widths; H kernels 1 to 3 with H strides 1 to 3 (rows no window
# reads) and H dilation (every tap's row checked for NaN); outputs exactly 8 wide (no overlapping
# last vector in the AVX2 build); rows so wide that one or a few row buffers fit (the batch of
# rows the first pass runs ahead); planes with more output rows than a batch; 1-D; activations;
# the k4 s4 form (up to four rows).
ROWS_CASES = [
    ((2, 3, 28, 28), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True)),
    ((1, 4, 17, 19), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 2, 12, 21), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(2, 2, 2, 2), activation="Relu")),
    ((1, 3, 13, 13), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
    ((1, 3, 20, 24), dict(kernel_shape=(3, 3), pads=(2, 2, 2, 2), dilations=(2, 2))),
    ((1, 2, 16, 16), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((2, 2, 15, 18), dict(kernel_shape=(3, 2), strides=(1, 2), ceil_mode=True, activation="Clip",
                          activation_params=(-0.5, 1.0))),
    ((2, 3, 9, 8), dict(kernel_shape=(1, 3), strides=(2, 1), pads=(0, 1, 0, 1))),
    ((1, 2, 10, 30), dict(kernel_shape=(2, 3), strides=(3, 2), pads=(0, 1, 1, 1))),
    ((1, 2, 11, 12), dict(kernel_shape=(3, 1), strides=(1, 1), dilations=(3, 1), pads=(3, 0, 3, 0))),
    ((1, 2, 8, 8), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 2, 17, 17), dict(kernel_shape=(3, 3), strides=(2, 2))),
    ((1, 2, 5, 300), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 1, 3, 3000), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 2, 40, 9), dict(kernel_shape=(3, 2), pads=(1, 0, 1, 1))),
    ((2, 3, 40), dict(kernel_shape=(3,), strides=(2,), pads=(1, 1))),
    # The k4 s4 form: four rows, two rounds of the even/odd split, ceil_mode's partial windows.
    ((1, 2, 16, 32), dict(kernel_shape=(4, 4), strides=(4, 4))),
    ((2, 2, 15, 37), dict(kernel_shape=(4, 4), strides=(4, 4), ceil_mode=True)),
    ((1, 3, 12, 64), dict(kernel_shape=(2, 4), strides=(3, 4), pads=(1, 2, 0, 2))),
    ((1, 2, 9, 40), dict(kernel_shape=(4, 4), strides=(1, 4), dilations=(2, 1), pads=(2, 0, 2, 0))),
    # Rows 16-bit floats take too (outputs of at least 16): stride 2 with a partial last window,
    # stride 1 with pads at one end only, a dilated W, a four-row k4 s4, rows of 16 exactly.
    ((1, 2, 12, 41), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True)),
    ((1, 3, 13, 33), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1), activation="Relu")),
    ((1, 2, 9, 48), dict(kernel_shape=(3, 3), dilations=(1, 2), pads=(1, 2, 1, 2))),
    ((2, 2, 9, 70), dict(kernel_shape=(4, 4), strides=(4, 4), ceil_mode=True)),
    ((1, 2, 6, 16), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
]


def _half_keys_data(rng, shape, kind):
    """Every bit pattern of a 16-bit float but NaN and -0.0 (subnormals, +-inf, +0.0 and both
    signs of every magnitude): the planes ROWS_FIRST computes as keys, whose order must be the
    values' on all of them."""
    inf = KINDS[kind].inf_bits
    mag = rng.integers(0, inf + 1, size=shape, dtype=np.uint16)
    sign = (rng.random(shape) < 0.5) & (mag != 0)
    return (mag | (sign.astype(np.uint16) << 15)).view(to_dtype(np.zeros(1), kind).dtype)


def _data(rng, shape, kind, data):
    """The forced-strategy tests' inputs: "plain" (small integers, many ties), "special" (NaN, -0.0,
    +-inf among them), "zeros" (-1, -0.0, +0.0), "bits" (16-bit floats: every pattern but NaN and
    -0.0), "nan-plane" (plain with one NaN in a middle plane)."""
    if data == "zeros":
        return _zeros_and_ties(rng, shape, kind)
    if data == "bits":
        return _half_keys_data(rng, shape, kind)
    x = make_array(rng, shape, kind, special=data == "special")
    if data == "nan-plane":
        x.reshape(-1)[x.size // 2] = np.nan
    return x


@pytest.mark.parametrize("kind, data", [(kind, data) for kind in ("float32", "float16", "bfloat16")
                                         for data in ("plain", "special", "zeros", "bits")[:3 + (kind != "float32")]])
@pytest.mark.parametrize("shape, attrs", ROWS_CASES, ids=[f"{c[0]}-{c[1]}" for c in ROWS_CASES])
def test_rows_first_cases_against_the_twin(shape, attrs, kind, data, rng):
    """float32, and 16-bit floats as keys (rows under the build's int16 lanes, 16 in the AVX2 build, in
    16-byte vectors): "bits" gives every pattern but NaN and -0.0 on the key path; "special" and
    "zeros" send their planes to the exact compare."""
    plan = _plan(shape, **attrs)
    x = _data(rng, shape, kind, data)
    want = reference.max_pool(x, **attrs)
    assert serves(S.ROWS_FIRST, plan, kind, False)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy="rows_first", **attrs), want)


@pytest.mark.parametrize("data", ["plain", "special", "zeros", "bits", "nan-plane"])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape, kernel", [
    ((1, 40, 14, 14), (2, 2)),         # VGG's pool5: rows of 7, many batch rows, whole vectors of pairs
    ((8, 5, 14, 14), (2, 2)),
    ((2, 3, 4, 10, 14), (2, 2, 2)),    # depth taps after the H pass
    ((1, 3, 10, 6), (2, 2)),           # rows of 3: the H pass's own loop
    ((1, 3, 10, 2), (2, 2)),
    ((3, 7, 6), (2,)),                 # 1-D: pairs only, a remainder past the vectors
])
def test_tiles_batch_form_16_bit_pairs(shape, kernel, kind, data, rng):
    """TILES' batch form on 16-bit floats (rows under the one pass's 8): the W pairs as vectors of
    fast keys whose loads are checked for NaN and -0.0 (pk_tiles_w2_h16), the H pass of rows of 4 to 8
    as one vector a row (pk_tiles_h2_k16); "bits" gives every pattern but NaN and -0.0 on that path."""
    attrs = dict(kernel_shape=kernel, strides=kernel)
    x = _data(rng, shape, kind, data)
    before = x.copy()
    want = reference.max_pool(x, **attrs)
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.TILES, **attrs), want)
    assert_same(x, before)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("special", [np.nan, -np.nan, -0.0])
def test_tiles_batch_form_finds_a_special_at_every_position(kind, special, rng):
    """The batch form's W pass checks every value it pairs: a NaN of either sign or a -0.0 (among +0.0
    and -1) put at each position of a pool5-like input in turn reaches the output as the twin says.
    (48 output rows in chunks of 3, so a batch's 42 pairs are two vectors of the AVX2 build's keys and a
    remainder; with fewer rows every batch would be the remainder.)"""
    shape, attrs = (1, 16, 6, 14), dict(kernel_shape=(2, 2), strides=(2, 2))
    assert _maxpool_strategies.chunk_size(16 * 3, 1) == 3
    base = to_dtype(rng.choice(np.array([-1.0, 0.0]), size=shape), kind)
    for x, want in each_position(base, special, **attrs):
        assert_same(pooling.max_pool(x, n_threads=1, _strategy=S.TILES, **attrs), want)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("special", [np.nan, -np.nan, -0.0])
@pytest.mark.parametrize("shape, kernel", [((1, 2, 4, 32), (2, 2)), ((1, 1, 4, 46), (2, 2)), ((1, 1, 2, 98), (2, 2)),
                                           ((1, 1, 2, 140), (2, 2)), ((1, 1, 2, 280), (2, 2)),
                                           ((1, 1, 4, 4, 36), (2, 2, 2)),
                                           ((1, 1, 2, 2, 98), (2, 2, 2))])
def test_tiles_one_pass_finds_a_special_at_every_position(shape, kernel, kind, special, rng):
    """The one pass reads a 2x2 window's two input rows one after another where a row is more than
    four vectors of 32 bytes or more (the first row's maxima kept in y, a last vector overlapping the
    one before it), else side by side: a NaN of either sign or a -0.0 (among +0.0 and -1) at each
    position in turn reaches the output as the twin says.  OW 16, 23, 49, 70 and 140 cover both forms,
    with and without a remainder, in each build and kind; 3-D rows (OW 18, 49) are read side by side."""
    attrs = dict(kernel_shape=kernel, strides=kernel)
    base = to_dtype(rng.choice(np.array([-1.0, 0.0]), size=shape), kind)
    for x, want in each_position(base, special, **attrs):
        assert_same(pooling.max_pool(x, n_threads=1, _strategy=S.TILES, **attrs), want)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("special", [np.nan, -np.nan, -0.0])
@pytest.mark.parametrize("shape, attrs", [
    ((1, 1, 9, 34), dict(pads=(1, 1, 1, 1))),   # a padded first window (a repeated row)
    ((1, 1, 10, 34), dict()),
    ((1, 1, 8, 35), dict(ceil_mode=True)),       # a partial last window
])
def test_rows_first_stride_2_finds_a_special_at_every_position(shape, attrs, kind, special, rng):
    """ROWS_FIRST's first pass checks each input row once, as one of the first two taps of a 3-row
    window with stride 2 (the row two windows share as the later one's), and every row of the last
    window: a NaN of either sign or a -0.0 (among +0.0 and -1) at each position in turn reaches the
    output as the twin says."""
    attrs = dict(attrs, kernel_shape=(3, 3), strides=(2, 2))
    assert serves(S.ROWS_FIRST, _plan(shape, **attrs), kind, False)
    base = to_dtype(rng.choice(np.array([-1.0, 0.0]), size=shape), kind)
    for x, want in each_position(base, special, **attrs):
        assert_same(pooling.max_pool(x, n_threads=1, _strategy=S.ROWS_FIRST, **attrs), want)


def _integer_bits(rng, shape, kind):
    """Every bit pattern of an integer kind, uniformly (its sign bit set in half of them)."""
    info = np.iinfo(kind)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=kind)


@pytest.mark.parametrize("data", ["plain", "bits"])
@pytest.mark.parametrize("kind", ["int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("shape, attrs", ROWS_CASES, ids=[f"{c[0]}-{c[1]}" for c in ROWS_CASES])
def test_rows_first_integer_cases_against_the_twin(shape, attrs, kind, data, rng):
    """The 2- and 4-byte integers through ROWS_FIRST's passes (the unsigned ones as keys, their sign
    bit flipped in and out): "plain" crowds both ends of the range and both sides of the sign bit
    with ties, "bits" is every pattern."""
    attrs = for_kind(attrs, kind)
    x = make_array(rng, shape, kind) if data == "plain" else _integer_bits(rng, shape, kind)
    want = reference.max_pool(x, **attrs)
    assert serves(S.ROWS_FIRST, _plan(shape, **attrs), kind, False)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy="rows_first", **attrs), want)


@pytest.mark.parametrize("kind", ["int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("shape, kernel", [((2, 3, 6, 20), (2, 2)), ((1, 2, 4, 6, 18), (2, 2, 2)),
                                           ((2, 3, 6, 40), (2, 2)), ((1, 2, 4, 6, 34), (2, 2, 2)),
                                           ((1, 2, 4, 64), (2, 2)), ((1, 2, 4, 146), (2, 2))])
def test_tiles_one_pass_integers(shape, kernel, kind, rng):
    """TILES' one pass over 2x2 and 2x2x2 windows of the 2- and 4-byte integers (rows of one vector,
    overlapping last vectors, whole vectors; OW 73: the 2-D rows read one after another, with a
    remainder, in every build with 32-byte vectors), every bit pattern and crowded ties."""
    for x in (_integer_bits(rng, shape, kind), make_array(rng, shape, kind)):
        want = reference.max_pool(x, kernel_shape=kernel, strides=kernel)
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, kernel_shape=kernel, strides=kernel, n_threads=nt,
                                         _strategy="tiles"), want)


def test_rows_first_takes_16_bit_floats_where_it_takes_float32():
    """Rows of 8 or more for both: 16-bit rows under the build's int16 lanes take 16-byte vectors."""
    for shape, attrs in ROWS_CASES:
        plan = _plan(shape, **attrs)
        for kind in ("float16", "bfloat16", "int16", "uint16", "int32", "uint32"):
            assert serves(S.ROWS_FIRST, plan, kind, False) == serves(S.ROWS_FIRST, plan, "float32", False)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("special", [np.nan, -np.nan, -0.0])
@pytest.mark.parametrize("shape, attrs", [ROWS_CASES[-5], ROWS_CASES[12], ROWS_CASES[18],
                                          ((1, 3, 20, 24), dict(kernel_shape=(3, 3), pads=(2, 2, 2, 2),
                                                                dilations=(2, 2)))])
def test_rows_first_redoes_a_plane_with_one_odd_value(shape, attrs, special, kind, rng):
    """A NaN of either sign anywhere (in a row only a later output row's first taps read, in the
    last rows, in a dilated tap), or a -0.0 beside zeros, sends its plane to the exact compare: with
    -0.0 the others are +0.0 and -1, so the first zero of each window decides the bits."""
    base = _zeros_and_ties(rng, shape, kind) if special == 0 else make_array(
        rng, shape, kind, special=False)
    base[base == 0] = 0.0
    for flat in list(rng.choice(base.size, size=12, replace=False)) + [0, base.size - 1]:
        x = base.copy()
        x.reshape(-1)[flat] = special
        if np.isnan(special) and np.signbit(special):
            bits = x.view(np.uint16 if x.itemsize == 2 else np.uint32)
            bits.reshape(-1)[flat] |= np.array(1, bits.dtype) << (8 * x.itemsize - 1)
        want = reference.max_pool(x, **attrs)
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy="rows_first", **attrs), want)


@pytest.mark.parametrize("data", ["plain", "special", "zeros"])
@pytest.mark.parametrize("shape, attrs", [
    ((1, 3, 5, 12, 16), dict(kernel_shape=(3, 3, 3), pads=(1, 1, 1, 1, 1, 1))),
    ((2, 2, 6, 9, 17), dict(kernel_shape=(2, 3, 3), strides=(2, 2, 2), ceil_mode=True)),
    ((1, 832, 2, 7, 7), dict(kernel_shape=(3, 3, 3), pads=(1, 1, 1, 1, 1, 1))),  # S3D's late slices
])
def test_depth_split_pools_slices_as_their_2d_call(shape, attrs, data, rng):
    """DEPTH_SPLIT's 2-D stage (no Indices) is the strategy the 2-D choice gives its slices (which
    one depends on the build), with the activation left to the depth pass; with Indices it stays
    FUSED's."""
    from pooling._maxpool_strategies import _depth_slices, choose_strategy
    x = _data(rng, shape, "float32", data)
    slices = _depth_slices(_plan(shape, **attrs), "float32")[0]
    chosen = choose_strategy(slices, "float32", 2, False)
    runners = {S.NARROW: "MaxPoolNarrow", S.ROWS_FIRST: "MaxPoolRows", S.PLANES: "MaxPoolPlanes"}
    for indices, name in ((False, runners.get(chosen)), (True, "MaxPool3d")):
        run = launch(_plan(shape, return_indices=indices, **attrs), "float32", 2, indices, "depth_split")
        inner = {type(c.cell_contents).__name__ for c in run.__closure__}
        if not indices:  # the slices' runner, a level down
            inner |= {type(d.cell_contents).__name__ for c in run.__closure__
                      if getattr(c.cell_contents, "__closure__", None) for d in c.cell_contents.__closure__}
        assert name is None or name in inner, (chosen, inner)
    for act in (dict(), dict(activation="Clip", activation_params=(-0.5, 0.25))):
        want = reference.max_pool(x, **attrs, **act)
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy="depth_split", **attrs, **act), want)
    want = reference.max_pool(x, **attrs)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy="depth_split", **attrs), want)
        got = pooling.max_pool(x, n_threads=nt, _strategy="depth_split", return_indices=True, **attrs)
        assert_same(got[0], want)
        np.testing.assert_array_equal(got[1], reference.max_pool(x, return_indices=True, **attrs)[1])


# 3-D windows one slice deep that keep every depth slice are pooled as 2-D over N*C*D planes
# (C3D's and S3D's (1, k, k) pools): the plan launched, and the values and Indices of the call.
SLICE_CASES = [
    ((1, 4, 3, 20, 20), dict(kernel_shape=(1, 3, 3), strides=(1, 2, 2), pads=(0, 1, 1, 0, 1, 1)), "2-D"),
    ((2, 3, 4, 16, 16), dict(kernel_shape=(1, 2, 2), strides=(1, 2, 2)), "2-D"),
    ((1, 2, 5, 9, 9), dict(kernel_shape=(1, 3, 3), dilations=(4, 1, 1), pads=(0, 1, 1, 0, 1, 1)), "2-D"),
    ((1, 2, 1, 9, 9), dict(kernel_shape=(1, 3, 3), strides=(3, 1, 1)), "2-D"),           # depth 1
    ((1, 2, 5, 9, 9), dict(kernel_shape=(1, 3, 3), strides=(2, 1, 1)), "3-D"),           # skips slices
    ((1, 2, 5, 9, 9), dict(kernel_shape=(1, 3, 3), pads=(1, 0, 0, 0, 0, 0)), "3-D"),     # depth pads
    ((1, 2, 5, 9, 9), dict(kernel_shape=(1, 3, 3), pads=(0, 0, 0, 1, 0, 0)), "3-D"),
    ((1, 2, 4, 9, 9), dict(kernel_shape=(1, 3, 3), strides=(2, 1, 1), pads=(0, 0, 0, 1, 0, 0)), "3-D"),
    ((1, 2, 5, 9, 9), dict(kernel_shape=(2, 3, 3)), "3-D"),
]


@pytest.mark.parametrize("kind", ["float32", "uint8", "float16"])
@pytest.mark.parametrize("shape, attrs, rank", SLICE_CASES)
def test_depth_windows_of_one_slice_are_pooled_in_2d(shape, attrs, rank, kind, rng):
    from pooling._maxpool_strategies import _as_slices
    flat = _as_slices(_plan(shape, **attrs))
    assert (flat is not None) == (rank == "2-D")
    if flat is not None:
        assert flat.out_shape[:2] == (shape[0], shape[1] * shape[2]) and len(flat.spatial) == 2
        assert _as_slices(_plan(shape, **attrs)) is flat  # one plan object: launches stay cached
    x = make_array(rng, shape, kind, special=True)
    want, want_idx = reference.max_pool(x, return_indices=True, **attrs)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, **attrs), want)
        got, idx = pooling.max_pool(x, n_threads=nt, return_indices=True, **attrs)
        assert_same(got, want)
        np.testing.assert_array_equal(idx, want_idx)
        col = pooling.max_pool(x, n_threads=nt, return_indices=True, storage_order=1, **attrs)[1]
        np.testing.assert_array_equal(col, reference.max_pool(x, return_indices=True, storage_order=1,
                                                              **attrs)[1])


@pytest.mark.parametrize("shape, attrs, kind, indices", [
    ((1, 2, 16, 16), dict(kernel_shape=(3, 3)), "float64", False),
    ((1, 2, 16, 9), dict(kernel_shape=(3, 3)), "float16", False),    # OW 7 < 8
    ((1, 2, 16, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1)), "bfloat16", False),  # W 7 < 8
    ((1, 2, 16, 16), dict(kernel_shape=(3, 3)), "uint8", False),
    ((1, 2, 16, 16), dict(kernel_shape=(3, 3), return_indices=True), "float32", True),
    ((1, 2, 16, 16), dict(kernel_shape=(4, 3)), "float32", False),        # H kernel 4
    ((1, 2, 16, 16), dict(kernel_shape=(3, 4)), "float32", False),        # W kernel 4
    ((1, 2, 40, 40), dict(kernel_shape=(5, 4), strides=(5, 4)), "float32", False),
    ((1, 2, 40, 80), dict(kernel_shape=(4, 4), strides=(4, 4), dilations=(1, 2)), "float32", False),
    ((1, 2, 16, 40), dict(kernel_shape=(3, 3), strides=(1, 3)), "float32", False),
    ((1, 2, 16, 40), dict(kernel_shape=(3, 1), strides=(1, 2)), "float32", False),
    ((1, 2, 16, 40), dict(kernel_shape=(3, 2), strides=(1, 2), dilations=(1, 2)), "float32", False),
    ((1, 2, 16, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1)), "float32", False),  # W < 8
    ((1, 2, 16, 16), dict(kernel_shape=(3, 3), strides=(2, 2)), "float32", False),    # OW 7
    ((1, 2, 16, 16), dict(kernel_shape=(2, 2), pads=(0, 0, 3, 0)), "float32", False),  # empty
    ((1, 2, 4, 16, 16), dict(kernel_shape=(1, 3, 3)), "float32", False),              # 3-D
    ((1, 16, 16, 2), dict(kernel_shape=(3, 3), layout="NHWC"), "float32", False),
])
def test_rows_first_serves_only_its_windows(shape, attrs, kind, indices, rng):
    assert not serves(S.ROWS_FIRST, _plan(shape, **attrs), kind, indices)
    with pytest.raises(ValueError, match="_strategy='rows_first' cannot compute this call"):
        pooling.max_pool(make_array(rng, shape, kind), _strategy="rows_first", **attrs)


def test_interleaved_serves_ranks_1_and_2_without_indices():
    assert serves(S.INTERLEAVED, _plan((1, 2, 8, 8), 3, 1, 1), "float32", False)
    assert not serves(S.INTERLEAVED, _plan((1, 2, 8, 8), 3, 1, 1, return_indices=True), "float32", True)
    assert not serves(S.INTERLEAVED, _plan((1, 2, 4, 8, 8), 3, 1, 1), "float32", False)
    assert not serves(S.INTERLEAVED, _plan((1, 2, 8, 8), 3, 1, 1, "NHWC"), "float32", False)


def test_tiles_serves_no_indices():
    plan = _plan((1, 2, 8, 8), 2, 2, return_indices=True)
    assert serves(S.TILES, _plan((1, 2, 8, 8), 2, 2), "float32", False)
    assert not serves(S.TILES, plan, "float32", True)


def _zeros_and_ties(rng, shape, kind):
    """Floats from {-1, -0.0, +0.0}, no NaN: the cheap compare's paths, where only the order of
    the compares decides which zero's bits win."""
    values = rng.choice(np.array([-1.0, -0.0, 0.0]), size=shape)
    return make_array(rng, shape, kind, special=False) if kind in ("int8", "uint8") else to_dtype(values, kind)


# PLANES' own paths: windows of up to 5 taps in one pass, 6 to 25 in two (windows of a fifth of
# the kernel, then up to five of those, the last overlapping), wider ones by doubling, along W and
# H, with dilation, strides > 1 after such a W pass, a plane copied without padding whose last row
# no window reads, a whole-plane window below and above the 32 values of the lane path, 1-D.
PLANES_CASES = [
    ((1, 2, 30, 31), dict(kernel_shape=(25, 16), pads=(12, 8, 12, 7))),
    ((1, 2, 20, 21), dict(kernel_shape=(7, 6), dilations=(2, 3), pads=(6, 7, 6, 8))),
    ((2, 3, 70), dict(kernel_shape=(30,), pads=(3, 3))),
    ((2, 3, 90), dict(kernel_shape=(26,), strides=(3,), pads=(2, 4))),
    ((2, 3, 20, 20), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 2, 19, 19), dict(kernel_shape=(9, 9), pads=(4, 4, 4, 4))),
    ((1, 2, 19, 19), dict(kernel_shape=(13, 13), pads=(6, 6, 6, 6))),
    ((1, 2, 13, 13), dict(kernel_shape=(13, 13), pads=(6, 6, 6, 6), activation="Relu")),
    ((1, 3, 16, 17), dict(kernel_shape=(5, 4), dilations=(2, 3), pads=(4, 3, 4, 3))),
    ((1, 3, 16, 17), dict(kernel_shape=(6, 5), strides=(2, 1), pads=(2, 2, 3, 2), ceil_mode=True)),
    ((1, 3, 16, 17), dict(kernel_shape=(4, 4), strides=(4, 4))),
    ((1, 2, 7, 8), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 2, 13, 13), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
    ((2, 5, 7, 7), dict(kernel_shape=(7, 7), strides=(7, 7))),
    ((2, 5, 5, 5), dict(kernel_shape=(5, 5))),
    ((1, 3, 9, 11), dict(kernel_shape=(9, 11), activation="Clip", activation_params=(-0.5, 2.0))),
    # 16-bit floats' keyed whole-plane reduction: a vector exactly, under a vector (the loop in order)
    ((2, 3, 4, 4), dict(kernel_shape=(4, 4))),
    ((2, 3, 3, 5), dict(kernel_shape=(3, 5))),
    ((2, 3, 40), dict(kernel_shape=(5,), pads=(2, 2))),
    ((2, 3, 100), dict(kernel_shape=(100,))),
    # float32's whole planes a vector's lanes at a time (4 or 8 planes reduced together), the rest
    # one at a time: planes of 49, of 9 and 8 values (just over, and exactly, 8 lanes), 1-D
    ((1, 37, 7, 7), dict(kernel_shape=(7, 7))),
    ((2, 20, 3, 3), dict(kernel_shape=(3, 3), strides=(3, 3))),
    ((1, 24, 2, 4), dict(kernel_shape=(2, 4), activation="Relu")),
    ((1, 19, 20), dict(kernel_shape=(20,))),
    # Outputs of the input's shape with few border taps: passes over x without the padded copy.
    ((2, 3, 16, 17), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1), activation="Relu")),
    ((1, 2, 12, 13), dict(kernel_shape=(2, 3), pads=(1, 1, 0, 1))),
]


# INTERLEAVED's paths: blocks of planes whose last one is partial (fewer planes than lanes, and
# 37 or 70 planes: 4-32 lanes by dtype), strides 1, 2 (literal loops) and 3, dilation, ceil_mode's
# partial windows and padding at both ends, padding wider than the kernel's reach (windows with no
# input: the empty value), input rows and columns no window reads, a fused activation, 1-D.
INTERLEAVED_CASES = [
    ((1, 3, 7, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 37, 7, 6), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True)),
    ((2, 35, 5, 8), dict(kernel_shape=(2, 3), strides=(3, 2), dilations=(2, 1), pads=(1, 0, 2, 2))),
    ((1, 70, 8, 8), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2), activation="Relu")),
    ((1, 9, 6, 6), dict(kernel_shape=(2, 2), pads=(3, 0, 3, 4), strides=(1, 2))),
    ((2, 5, 9, 7), dict(kernel_shape=(2, 2), strides=(3, 3))),
    ((1, 17, 4, 9), dict(kernel_shape=(1, 3), strides=(1, 2), activation="Clip",
                         activation_params=(-0.5, 1.0))),
    ((3, 11, 40), dict(kernel_shape=(3,), strides=(2,), pads=(1, 1))),
]


# NARROW's paths (float32 planes whose rows fit one vector, 4 lanes in the baseline build, 8 in the
# AVX2 one): 7x7 and 8x8 planes, rows of 4 and fewer, one value per plane (every plane read from the
# copy with margins), k5, k2 with the pad at either end, W dilation, an H stride, ceil_mode's partial
# windows, outputs narrower than the input, a spill over two output rows, 1-D, fused activations.
NARROW_CASES = [
    ((1, 5, 7, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 200, 7, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1), activation="Relu")),
    ((2, 3, 8, 8), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 9, 7, 6), dict(kernel_shape=(3, 3), strides=(2, 1), pads=(1, 1, 1, 1), ceil_mode=True)),
    ((1, 6, 9, 8), dict(kernel_shape=(2, 3), dilations=(2, 2), pads=(1, 2, 0, 2))),
    ((1, 7, 5, 4), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 7, 6, 4), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
    ((1, 7, 6, 4), dict(kernel_shape=(2, 2), pads=(1, 1, 0, 0), activation="Clip",
                        activation_params=(-0.5, 1.0))),
    ((1, 5, 9, 3), dict(kernel_shape=(4, 2))),
    ((2, 3, 5, 2), dict(kernel_shape=(3, 1), pads=(1, 0, 1, 0))),
    ((1, 40, 1, 1), dict(kernel_shape=(1, 1))),
    ((1, 11, 3, 1), dict(kernel_shape=(3, 1), pads=(1, 0, 1, 0))),
    ((2, 5, 4), dict(kernel_shape=(3,), pads=(1, 1))),
    ((2, 5, 7), dict(kernel_shape=(16,), pads=(8, 7))),
    # rows of 9 to 48: two or three strips of the AVX2 build's lanes, one to three of the AVX-512
    # build's;
    # the rolling forms (k2 with the pad at either end, k3, k5, wider windows of the input's
    # shape), the general form (dilation, an H stride), spills of the second strip
    ((1, 9, 13, 13), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
    ((1, 3, 11, 17), dict(kernel_shape=(2, 2), pads=(1, 1, 0, 0))),
    ((1, 5, 14, 16), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 3, 10, 15), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2), activation="Relu")),
    ((1, 4, 20, 20), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 3, 19, 19), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 2, 9, 32), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 3, 15, 15), dict(kernel_shape=(7, 7), pads=(3, 3, 3, 3))),
    ((1, 2, 9, 9), dict(kernel_shape=(9, 9), pads=(4, 4, 4, 4))),
    ((1, 3, 12, 20), dict(kernel_shape=(3, 3), strides=(2, 1), pads=(1, 1, 1, 1), ceil_mode=True)),
    ((1, 3, 10, 30), dict(kernel_shape=(4, 7), dilations=(1, 2), pads=(1, 6, 2, 6))),
    ((1, 3, 35, 35), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 2, 24, 24), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1), activation="Relu")),
    ((1, 2, 40, 40), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 3, 6, 48), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
    ((1, 3, 7, 45), dict(kernel_shape=(3, 5), strides=(2, 1), pads=(1, 2, 1, 2))),
    # windows wholly in the padding along W, at either end (-inf there; 16-bit floats' masked taps
    # are keys of 0, a row's maximum raised to -inf's key), on one and on three strips
    ((1, 3, 5, 6), dict(kernel_shape=(2, 2), pads=(0, 3, 1, 2))),
    ((1, 2, 6, 40), dict(kernel_shape=(3, 2), pads=(1, 1, 0, 4))),
    ((1, 2, 5, 33), dict(kernel_shape=(2, 3), dilations=(1, 2), pads=(1, 5, 1, 5))),
]


# NHWC_BLOCKS' paths (float32 channels-last, channels in blocks of four vectors, then single
# vectors, then one vector ending at C): channels of one vector (16, the AVX-512 build's), of
# blocks and single vectors with a tail (19, 67), the stem's k3 s2 p1, SPPF's k5 s1 p2, k2 s2,
# ceil_mode's partial windows, dilation (every tap checked for NaN), a stride wider than the
# window (columns no window reads), asymmetric pads, pads as wide as the window (windows without
# a tap: the exact loop), 1-D and 3-D, fused activations.
NHWC_BLOCKS_CASES = [
    ((1, 14, 14, 16), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((2, 9, 11, 19), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 12, 10, 67), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 8, 8, 40), dict(kernel_shape=(2, 2), strides=(2, 2))),
    ((1, 7, 9, 16), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True, activation="Relu")),
    ((1, 9, 9, 24), dict(kernel_shape=(3, 2), dilations=(2, 3), pads=(2, 1, 1, 3))),
    ((1, 11, 13, 16), dict(kernel_shape=(2, 2), strides=(3, 4))),
    ((1, 6, 7, 17), dict(kernel_shape=(4, 3), strides=(2, 1), pads=(0, 2, 3, 0),
                         activation="Clip", activation_params=(-0.5, 1.0))),
    ((1, 4, 5, 16), dict(kernel_shape=(2, 2), strides=(3, 3), pads=(2, 2, 2, 2))),
    ((3, 23, 33), dict(kernel_shape=(4,), strides=(3,), pads=(1, 2))),
    ((1, 5, 9, 8, 20), dict(kernel_shape=(2, 3, 3), strides=(1, 2, 2), pads=(1, 1, 1, 0, 1, 1))),
    ((1, 6, 5, 7, 16), dict(kernel_shape=(3, 2, 2), strides=(2, 1, 2), dilations=(2, 1, 1),
                            ceil_mode=True)),
]


# The window cases of the strategies that serve only some geometries, forced.
OWN_CASES = ([(S.PLANES, *c) for c in PLANES_CASES] + [(S.TILES, *c) for c in TILES_CASES]
             + [(S.INTERLEAVED, *c) for c in INTERLEAVED_CASES])
FLOAT32_CASES = ([(S.NARROW, *c) for c in NARROW_CASES]
                 + [(S.NHWC_BLOCKS, shape, dict(attrs, layout="NHWC")) for shape, attrs in NHWC_BLOCKS_CASES])


@pytest.mark.parametrize("data", ["plain", "special", "zeros"])
@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("strategy, shape, attrs", OWN_CASES,
                         ids=[f"{c[0].value}-{c[1]}-{c[2]}" for c in OWN_CASES])
def test_own_window_cases_against_the_twin(strategy, shape, attrs, kind, data, rng):
    attrs = for_kind(attrs, kind)
    x = _data(rng, shape, kind, data)
    want = reference.max_pool(x, **attrs)
    assert serves(strategy, _plan(x.shape, **attrs), kind, False)
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs), want)


@pytest.mark.parametrize("data", ["plain", "special", "zeros", "bits", "nan-plane"])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape, attrs", NHWC_BLOCKS_CASES, ids=[f"{c[0]}-{c[1]}" for c in NHWC_BLOCKS_CASES])
def test_nhwc_blocks_16_bit_cases_against_the_twin(shape, attrs, kind, data, rng):
    """NHWC_BLOCKS on 16-bit floats' keys: "bits" (every pattern but NaN and -0.0) on the key path,
    "special" and "zeros" on the exact loop row by row, "nan-plane" both."""
    attrs = dict(attrs, layout="NHWC")
    x = _data(rng, shape, kind, data)
    want = reference.max_pool(x, **attrs)
    assert serves(S.NHWC_BLOCKS, _plan(x.shape, **attrs), kind, False)
    before = x.copy()
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NHWC_BLOCKS, **attrs), want)
    assert_same(x, before)


@pytest.mark.parametrize("data", ["plain", "bits"])
@pytest.mark.parametrize("kind", ["int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("shape, attrs", NHWC_BLOCKS_CASES, ids=[f"{c[0]}-{c[1]}" for c in NHWC_BLOCKS_CASES])
def test_nhwc_blocks_integer_cases_against_the_twin(shape, attrs, kind, data, rng):
    """NHWC_BLOCKS on the 2- and 4-byte integers (the unsigned ones as keys): crowded ties at both ends
    of the range and every bit pattern, at 1 to 3 threads; the input never written."""
    attrs = for_kind(dict(attrs, layout="NHWC"), kind)
    x = make_array(rng, shape, kind) if data == "plain" else _integer_bits(rng, shape, kind)
    want = reference.max_pool(x, **attrs)
    assert serves(S.NHWC_BLOCKS, _plan(x.shape, **attrs), kind, False)
    before = x.copy()
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NHWC_BLOCKS, **attrs), want)
    assert_same(x, before)


@pytest.mark.parametrize("data", ["plain", "special", "zeros", "nan-plane"])
@pytest.mark.parametrize("shape, attrs", NHWC_BLOCKS_CASES, ids=[f"{c[0]}-{c[1]}" for c in NHWC_BLOCKS_CASES])
def test_nhwc_with_indices_in_registers(shape, attrs, data, rng):
    """NHWC with Indices, float32 on a vector of channels or more, carries each lane's winner in
    registers (pk_nhwc_irow_f32; rows holding a NaN go to the exact loop): values and "onnx" Indices
    as the twin's, the other formats as NHWC by transpose writes them, at 1-3 threads."""
    _check_nhwc_with_indices(_data(rng, shape, "float32", data), dict(attrs, layout="NHWC"),
                             ("onnx", "plane", "tf", "tf_batch"))


def _check_nhwc_with_indices(x, attrs, formats):
    """NHWC forced, with Indices in each of `formats`, at 1-3 threads: values and "onnx" Indices as the
    twin's, the other formats as NHWC by transpose writes them; x never written."""
    want, want_idx = reference.max_pool(x, return_indices=True, **attrs)
    before = x.copy()
    for fmt in formats:
        other = pooling.max_pool(x, return_indices=True, index_format=fmt, _strategy=S.NHWC_TRANSPOSED, **attrs)[1]
        for nt in (1, 2, 3):
            got, idx = pooling.max_pool(x, n_threads=nt, return_indices=True, index_format=fmt,
                                        _strategy=S.NHWC, **attrs)
            assert_same(got, want)
            np.testing.assert_array_equal(idx, want_idx if fmt == "onnx" else other)
    assert_same(x, before)


@pytest.mark.parametrize("data", ["plain", "bits"])
@pytest.mark.parametrize("kind", ["int32", "uint32"])
@pytest.mark.parametrize("shape, attrs", NHWC_BLOCKS_CASES, ids=[f"{c[0]}-{c[1]}" for c in NHWC_BLOCKS_CASES])
def test_nhwc_with_indices_in_registers_integer_cases(shape, attrs, kind, data, rng):
    """NHWC with Indices on the 4-byte integers (pk_nhwc_irow_i32, the unsigned ones as keys): crowded
    ties at both ends of the range and every bit pattern; values and "onnx" Indices as the twin's, the
    other formats as NHWC by transpose writes them, at 1-3 threads; the input never written."""
    x = make_array(rng, shape, kind) if data == "plain" else _integer_bits(rng, shape, kind)
    _check_nhwc_with_indices(x, for_kind(dict(attrs, layout="NHWC"), kind), ("onnx", "plane", "tf"))


@pytest.mark.parametrize("kind", ["int32", "uint32"])
@pytest.mark.parametrize("shape, attrs", [NHWC_BLOCKS_CASES[1], NHWC_BLOCKS_CASES[5], NHWC_BLOCKS_CASES[10]])
def test_nhwc_integer_indices_find_the_first_winner_at_every_pixel(shape, attrs, kind, rng):
    """The type's maximum (and, unsigned, a value past the signed range) at each pixel in turn among
    values tied at the minimum and just below: the first maximum in window order, as the twin's."""
    info = np.iinfo(kind)
    attrs = for_kind(dict(attrs, layout="NHWC", return_indices=True), kind)
    base = rng.choice(np.array([info.min, info.max - 1], dtype=kind), size=shape)
    for pixel in np.ndindex(*shape[1:-1]):
        x = base.copy()
        x[(0,) + pixel + (int(rng.integers(shape[-1])),)] = info.max
        want, want_idx = reference.max_pool(x, **attrs)
        got, idx = pooling.max_pool(x, n_threads=2, _strategy=S.NHWC, **attrs)
        assert_same(got, want)
        np.testing.assert_array_equal(idx, want_idx)


# Interior columns take their window as one list of taps (pk_nhwc_itaps), up to PK_NHWC_ITAPS (64):
# exactly 64 (4x4x4), past it (9x9: the rows' loop, but for the edge rows' shorter windows), a middle
# column cut by the padding (the list holds its 3 taps of 4), a width of one output column (the list
# built, then unused: the last column keeps the rows' loop), and strides and dilations along the row
# with whole blocks of four vectors of channels and a tail (72: AVX2 and AVX-512 alike).
ITAPS_CASES = [
    ((1, 6, 7, 9, 16), dict(kernel_shape=(4, 4, 4), pads=(1, 2, 1, 2, 1, 2))),
    ((1, 12, 14, 16), dict(kernel_shape=(9, 9), pads=(4, 4, 4, 4))),
    ((1, 5, 3, 24), dict(kernel_shape=(3, 4), pads=(1, 1, 1, 2))),
    ((2, 6, 1, 16), dict(kernel_shape=(3, 1), strides=(2, 1), pads=(1, 0, 1, 0))),
    ((1, 7, 13, 72), dict(kernel_shape=(3, 3), strides=(2, 2), dilations=(1, 2), pads=(1, 2, 1, 2))),
]
FIRST_WINNER_CASES = [NHWC_BLOCKS_CASES[1], NHWC_BLOCKS_CASES[5], NHWC_BLOCKS_CASES[10]] + ITAPS_CASES


@pytest.mark.parametrize("special", [np.nan, -0.0])
@pytest.mark.parametrize("shape, attrs", FIRST_WINNER_CASES, ids=[f"{c[0]}-{c[1]}" for c in FIRST_WINNER_CASES])
def test_nhwc_with_indices_finds_the_first_winner_at_every_pixel(shape, attrs, special, rng):
    """A NaN (sends its rows to the exact loop) or a -0.0 among +0.0 and -1 (the first zero in
    window order wins, in the registers' compare) at each pixel in turn: the twin's Indices.  With the
    list of taps' cases, the NaN's pixel is one the list must mark as checked."""
    attrs = dict(attrs, layout="NHWC", return_indices=True)
    base = (rng.choice(np.array([-1.0, 0.0]), size=shape) if special == 0
            else rng.standard_normal(shape)).astype(np.float32)
    for pixel in np.ndindex(*shape[1:-1]):
        x = base.copy()
        x[(0,) + pixel + (int(rng.integers(shape[-1])),)] = special
        want, want_idx = reference.max_pool(x, **attrs)
        got, idx = pooling.max_pool(x, n_threads=2, _strategy=S.NHWC, **attrs)
        assert_same(got, want)
        np.testing.assert_array_equal(idx, want_idx)


@pytest.mark.parametrize("kind", ["float32", "int32"])
@pytest.mark.parametrize("shape, attrs", ITAPS_CASES, ids=[f"{c[0]}-{c[1]}" for c in ITAPS_CASES])
def test_nhwc_with_indices_takes_interior_windows_as_one_list(shape, attrs, kind, rng):
    """NHWC with Indices at the list of taps' limits: values and Indices in every format as the twin
    and NHWC by transpose give them (a NaN or a -0.0 at each pixel: the first-winner test above)."""
    x = make_array(rng, shape, kind)
    _check_nhwc_with_indices(x, for_kind(dict(attrs, layout="NHWC"), kind), ("onnx", "plane", "tf", "tf_batch"))


def _narrow_builds():
    """The builds NARROW may run from here: the process's, and the AVX-512 one where the rules
    name it (pooling._maxpool_strategies._narrow_core)."""
    from pooling import _maxpool_strategies
    return _maxpool_strategies._core, _tuning.kernels_for(Strategy.NARROW, 1, 4)


@pytest.mark.parametrize("data", ["plain", "special", "zeros", "nan-plane"])
@pytest.mark.parametrize("strategy, shape, attrs", FLOAT32_CASES,
                         ids=[f"{c[0].value}-{c[1]}-{c[2]}" for c in FLOAT32_CASES])
def test_float32_window_cases_against_the_twin(strategy, shape, attrs, data, rng):
    """The float32-only strategies on their own geometries ("nan-plane": one NaN, in a middle
    plane only, so the planes before and after it stay on the cheap compare), wherever this build
    serves them (NARROW: rows up to its float32 lanes)."""
    x = _data(rng, shape, "float32", data)
    want = reference.max_pool(x, **attrs)
    if strategy is S.NHWC_BLOCKS:
        assert serves(strategy, _plan(x.shape, **attrs), "float32", False)
    if not serves(strategy, _plan(x.shape, **attrs), "float32", False):
        width = max(core.NARROW_WIDTH for core in _narrow_builds())
        assert strategy is S.NARROW and max(shape[-1], want.shape[-1]) > width
        pytest.skip(f"rows wider than the {width} values NARROW takes here")
    before = x.copy()
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs), want)
    assert_same(x, before)


@pytest.mark.parametrize("data", ["plain", "special", "zeros", "bits", "nan-plane"])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape, attrs", NARROW_CASES, ids=[f"{c[0]}-{c[1]}" for c in NARROW_CASES])
def test_narrow_16_bit_cases_against_the_twin(shape, attrs, kind, data, rng):
    """NARROW on 16-bit floats' keys (rows of up to three vectors of them: 48 values in the AVX2 and
    AVX-512 builds, 24 in the baseline one): "bits" (every pattern but NaN and -0.0) on the key path,
    "special" and "zeros" on the exact loop plane by plane, "nan-plane" both."""
    x = _data(rng, shape, kind, data)
    want = reference.max_pool(x, **attrs)
    if not serves(S.NARROW, _plan(x.shape, **attrs), kind, False):
        width = max(core.NARROW_WIDTH_H16 for core in _narrow_builds())
        assert max(shape[-1], want.shape[-1]) > width
        pytest.skip(f"rows wider than the {width} values NARROW takes here")
    before = x.copy()
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NARROW, **attrs), want)
    assert_same(x, before)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("special", [np.nan, -np.nan, -0.0])
@pytest.mark.parametrize("shape, attrs", [
    ((2, 2, 3, 3), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),   # planes under a vector of keys
    ((1, 3, 5, 7), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),   # whole vectors and one overlapping
    ((1, 2, 4, 40), dict(kernel_shape=(2, 5), pads=(0, 2, 1, 2))),   # three strips
])
def test_narrow_16_bit_keys_find_a_special_at_every_position(shape, attrs, kind, special, rng):
    """NARROW keys each 16-bit plane once and checks it as it does: a NaN of either sign or a -0.0 (among
    +0.0 and -1) at each position in turn reaches the output as the twin says, the planes before and
    after it keyed as usual."""
    base = to_dtype(rng.choice(np.array([-1.0, 0.0]), size=shape), kind)
    if not serves(S.NARROW, _plan(shape, **attrs), kind, False):
        pytest.skip("rows wider than NARROW takes here")
    for x, want in each_position(base, special, **attrs):
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NARROW, **attrs), want)


@pytest.mark.parametrize("data", ["plain", "bits"])
@pytest.mark.parametrize("kind", ["int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("shape, attrs", NARROW_CASES, ids=[f"{c[0]}-{c[1]}" for c in NARROW_CASES])
def test_narrow_integer_cases_against_the_twin(shape, attrs, kind, data, rng):
    """NARROW on the 2- and 4-byte integers (rows of up to three vectors: 48 2-byte and 24 4-byte values
    in the AVX2 and AVX-512 builds), crowded ties at both ends of the range and every bit pattern, at 1
    to 3 threads; the input never written."""
    x = make_array(rng, shape, kind) if data == "plain" else _integer_bits(rng, shape, kind)
    want = reference.max_pool(x, **attrs)
    if not serves(S.NARROW, _plan(x.shape, **attrs), kind, False):
        lanes = max(_maxpool_strategies._narrow_lanes(core, kind)[1] for core in _narrow_builds())
        assert max(shape[-1], want.shape[-1]) > lanes
        pytest.skip(f"rows wider than the {lanes} values NARROW takes here")
    before = x.copy()
    for nt in (1, 2, 3):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NARROW, **attrs), want)
    assert_same(x, before)


def test_narrow_random_integer_geometries(rng):
    """NARROW forced on random geometries it serves here, as test_narrow_random_geometries, in the 2-
    and 4-byte integers (every bit pattern, or a few values with ties), against the twin."""
    done = tries = 0
    while (tries < 600 or done < 60) and tries < 20000:
        tries += 1
        shape, attrs, plan = _random_narrow_geometry(rng)
        if plan is None:
            continue
        kind = ("int16", "uint16", "int32", "uint32")[int(rng.integers(0, 4))]
        if not serves(S.NARROW, plan, kind, False):
            continue
        x = _integer_bits(rng, shape, kind) if rng.random() < 0.5 else make_array(rng, shape, kind)
        assert_same(pooling.max_pool(x, n_threads=int(rng.integers(1, 4)), _strategy=S.NARROW, **attrs),
                    reference.max_pool(x, **attrs))
        done += 1
    assert done >= 60, (done, tries)


@pytest.mark.parametrize("expected, plan, kind, indices", CHOOSER_CASES,
                         ids=lambda v: v.value if isinstance(v, Strategy) else None)
def test_the_chooser_picks_each_strategy(expected, plan, kind, indices):
    """The cases name the choices of builds whose vectors hold 4 float32 or more.  In a build
    without vectors (PK_SIMD_SCALAR, as MSVC compiles: one lane) the same rules have other bounds:
    NHWC_BLOCKS takes channels down to one lane, and NARROW only rows up to its NARROW_WIDTH."""
    from pooling import _maxpool_strategies
    got = choose_strategy(plan, kind, 2, indices)
    if _maxpool_strategies._core.NARROW_LANES == 1:
        if expected is S.NHWC and kind in ("float32", "float16", "bfloat16") and not indices:
            expected = S.NHWC_BLOCKS
        if expected is S.NARROW and not serves(S.NARROW, plan, kind, indices):
            assert got is not S.NARROW and serves(got, plan, kind, indices)
            return
    assert got is expected


@pytest.mark.parametrize("shape, attrs, nan_at", [
    # a "same" k3 window with both pads above the row (the rolling form's rows start at -ph)
    ((1, 7, 18, 18), dict(kernel_shape=(3, 3), pads=(2, 1, 0, 1)), None),
    ((1, 5, 9, 11), dict(kernel_shape=(5, 5), pads=(0, 4, 4, 0)), None),
    # an output narrower than the input: the taps read columns past the strips, checked apart
    ((1, 4, 10, 10), dict(kernel_shape=(1, 6), dilations=(2, 2), pads=(0, 0, 0, 4)), (2, 3, 9)),
    ((1, 4, 10, 30), dict(kernel_shape=(2, 9), dilations=(1, 3)), (2, 5, 29)),
    # a k2 window of the input's shape with a pad of 2 (a stride without effect on one row): the
    # window is wholly padding (a review found it took the P = 1 roll)
    ((3, 1, 1, 1), dict(kernel_shape=(2, 2), strides=(3, 5), pads=(2, 1, 0, 0)), None),
    # windows wholly in the padding, in a plane redone with the exact compare: the empty value
    ((1, 9, 1, 7), dict(kernel_shape=(2, 3), strides=(2, 1), dilations=(2, 1), pads=(1, 2, 0, 0),
                        ceil_mode=True), (3, 0, 4)),
])
@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
def test_narrow_geometries_the_fuzzing_found(shape, attrs, nan_at, kind, rng):
    """NARROW against the twin on geometries a fuzz run (random windows, values from {-1, -0.0, 0,
    1, 2, +-inf} and NaN) found wrong, wherever a build here serves them."""
    x = rng.choice(np.array([-1.0, -0.0, 0.0, 1.0, 2.0, np.inf, -np.inf], np.float32), size=shape)
    if nan_at is not None:
        x[(0,) + nan_at] = np.nan
    x = to_dtype(x, kind)
    want = reference.max_pool(x, **attrs)
    if not serves(S.NARROW, _plan(x.shape, **attrs), kind, False):
        pytest.skip("rows wider than NARROW takes here")
    for nt in (1, 2):
        assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.NARROW, **attrs), want)


def _random_narrow_geometry(rng):
    """(shape, attrs, plan) of a random geometry of the kind NARROW serves (planes up to 49 wide and 19
    tall, windows of 1-6 taps with pads, dilation, an H stride and ceil_mode, 1-D too); plan None where
    the attributes are invalid for the shape."""
    rank = 2 if rng.random() < 0.85 else 1
    W, H, planes = int(rng.integers(1, 50)), int(rng.integers(1, 20)), int(rng.integers(1, 40))
    k = tuple(int(v) for v in rng.integers(1, 7, size=rank))
    attrs = dict(kernel_shape=k,
                 strides=(int(rng.integers(1, 3)), 1)[2 - rank:],
                 dilations=tuple(int(v) for v in rng.integers(1, 3, size=rank)),
                 pads=tuple(int(rng.integers(0, kk)) for kk in k + k),
                 ceil_mode=bool(rng.random() < 0.3))
    shape = (1, planes, H, W)[:2] + ((H, W) if rank == 2 else (W,))
    try:
        return shape, attrs, _plan(shape, **attrs)
    except ValueError:
        return shape, attrs, None


def test_narrow_random_geometries(rng):
    """NARROW forced on random geometries it serves here (planes up to 49 wide and 19 tall, windows
    of 1-6 taps with pads, dilation, an H stride and ceil_mode, 1-D too) over values with ties of
    -0.0/+0.0, infinities and a NaN in some, in float32 and 16-bit floats, against the twin bit for
    bit (the fuzz run that found the cases above, kept)."""
    values = np.array([-1.0, -0.0, 0.0, 1.0, 2.0, np.inf, -np.inf], np.float32)
    done = tries = 0
    while (tries < 1500 or done < 100) and tries < 20000:   # (one-lane builds: rows of up to 3 only)
        tries += 1
        shape, attrs, plan = _random_narrow_geometry(rng)
        if plan is None:
            continue
        kind = ("float32", "float16", "bfloat16")[int(rng.integers(0, 3))]
        if not serves(S.NARROW, plan, kind, False):
            continue
        x = rng.choice(values, size=shape) if rng.random() < 0.7 else rng.standard_normal(shape).astype(np.float32)
        if rng.random() < 0.2:
            x.reshape(-1)[rng.integers(0, x.size)] = np.nan
        x = to_dtype(x, kind)
        assert_same(pooling.max_pool(x, n_threads=int(rng.integers(1, 4)), _strategy=S.NARROW, **attrs),
                    reference.max_pool(x, **attrs))
        done += 1
    assert done >= 100, (done, tries)


@pytest.mark.parametrize("shape, kernel, pads, wider", [
    ((1, 832, 7, 7), 3, 1, S.INTERLEAVED),        # Inception 5b's branch pool
    ((1, 512, 8, 8), 3, 1, S.ROWS_FIRST),
    ((1, 832, 7, 7), 5, 2, S.INTERLEAVED),
    ((1, 512, 13, 13), 2, (0, 0, 1, 1), S.ROWS_FIRST),    # YOLOv3-tiny's k2 s1: on two vectors at most
    ((1, 512, 20, 20), 2, (0, 0, 1, 1), S.ROWS_FIRST),
    ((1, 512, 20, 20), (1, 2), (0, 0, 0, 1), S.ROWS_FIRST),  # a 1-tap axis: on one vector only
    ((1, 256, 20, 20), 5, 2, S.PLANES),                   # YOLOv5's SPPF
    ((1, 192, 28, 28), 3, 1, S.ROWS_FIRST),               # Inception 3a's branch pool
    ((1, 288, 35, 35), 3, 1, S.ROWS_FIRST),               # Inception-v3's 35x35 branch pool
    ((1, 256, 40, 40), 5, 2, S.PLANES),                   # YOLOv5's SPPF at 1280
])
def test_narrow_takes_rows_up_to_the_builds_lanes(shape, kernel, pads, wider):
    """NARROW serves rows of up to three vectors of the build it runs from: 24 values in the AVX2
    build, 48 where it runs from the AVX-512 build (a rule of pooling._tuning); in the baseline build
    (12) wider rows go to the strategy after it.  2-tap windows take it on two vectors at most, windows
    with a 1-tap axis on one."""
    plan = _plan(shape, kernel, 1, pads)
    fits = [core for core in _narrow_builds() if core.NARROW_WIDTH >= shape[-1]]
    taps = min(kernel) if isinstance(kernel, tuple) else kernel
    if taps < 3 and fits:  # (on the build the lane rule picks: the fewest lanes, then strips, then the process's)
        fits = fits if _maxpool_strategies._narrow_core(plan, "float32").NARROW_LANES * taps >= shape[-1] else []
    want = S.NARROW if fits else wider
    for nt in (1, 2):
        assert choose_strategy(plan, "float32", nt, False) is want


@pytest.mark.parametrize("shape, kernel, pads, wider", [
    ((1, 832, 7, 7), 3, 1, S.INTERLEAVED),
    ((1, 512, 8, 8), 3, 1, S.INTERLEAVED),
    ((1, 512, 14, 14), 3, 1, S.ROWS_FIRST),
    ((1, 512, 13, 13), 2, (0, 0, 1, 1), S.ROWS_FIRST),
    ((1, 256, 20, 20), 5, 2, S.PLANES),
    ((1, 192, 28, 28), 3, 1, S.ROWS_FIRST),
    ((1, 288, 35, 35), 3, 1, S.ROWS_FIRST),               # three vectors, a window ROWS_FIRST takes
    ((1, 256, 40, 40), 5, 2, S.PLANES),                   # three vectors, one it does not: NARROW's
    ((1, 128, 48, 48), 5, 2, S.PLANES),
    ((1, 64, 36, 36), (4, 4), (1, 1, 2, 2), S.PLANES),
])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_narrow_takes_16_bit_rows_of_up_to_two_vectors(shape, kernel, pads, wider, kind):
    """16-bit floats take NARROW on rows of at most two vectors of their keys (32 values in the AVX2
    and AVX-512 builds, 16 in the baseline one; docs/tuning.md#narrow-strategy), 2-tap windows too,
    and on three where ROWS_FIRST does not serve the window (more than three taps on an axis)."""
    plan = _plan(shape, kernel, 1, pads)
    lanes = _maxpool_strategies._core.NARROW_LANES_H16
    taps = max(kernel) if isinstance(kernel, tuple) else kernel
    fits = (shape[-1] <= 2 * lanes or (shape[-1] <= 3 * lanes and taps > 3)) and lanes > 1
    for nt in (1, 2):
        got = choose_strategy(plan, kind, nt, False)
        assert got is (S.NARROW if fits else wider) or (lanes == 1 and serves(got, plan, kind, False))


@pytest.mark.parametrize("shape, attrs", [
    ((1, 7, 9, 16), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 8, 7, 16), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
    ((1, 9, 9, 16), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True)),
    ((1, 9, 10, 16), dict(kernel_shape=(2, 3), strides=(3, 2), pads=(0, 1, 2, 0))),
    ((1, 9, 10, 16), dict(kernel_shape=(3, 2), dilations=(2, 2), pads=(1, 0, 0, 1))),
    ((1, 5, 6, 7, 16), dict(kernel_shape=(3, 2, 3), strides=(2, 2, 1), pads=(1, 0, 1, 1, 1, 1))),
])
@pytest.mark.parametrize("kind, special", [("float32", np.nan), ("float16", np.nan), ("bfloat16", np.nan),
                                           ("float16", -0.0), ("bfloat16", -0.0)])
def test_nhwc_blocks_finds_a_nan_at_every_pixel(shape, attrs, kind, special, rng):
    """NHWC_BLOCKS looks for NaN (16-bit floats: and -0.0, which their keys tie with +0.0) only in
    each output row's own taps (the first stride's worth of each window, and all of the last
    window's): the value put at each pixel in turn, in one channel, must reach the output as the
    twin says (-0.0 among +0.0 and -1, so the first zero decides the bits)."""
    attrs = dict(attrs, layout="NHWC")
    if special == 0:
        base = to_dtype(rng.choice(np.array([-1.0, 0.0]), size=shape), kind)
    else:
        base = to_dtype(rng.standard_normal(shape), kind)
    for pixel in np.ndindex(*shape[1:-1]):
        x = base.copy()
        x[(0,) + pixel + (int(rng.integers(shape[-1])),)] = special
        assert_same(pooling.max_pool(x, n_threads=2, _strategy=S.NHWC_BLOCKS, **attrs),
                    reference.max_pool(x, **attrs))


@pytest.mark.parametrize("strategy, shape, attrs", [
    (S.ROWS_FIRST, (2, 5, 14, 17), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    (S.ROWS_FIRST, (1, 7, 9, 20), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1), activation="Relu")),
    (S.NHWC_BLOCKS, (2, 9, 11, 19), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                         layout="NHWC")),
    (S.NHWC_BLOCKS, (1, 5, 6, 7, 16), dict(kernel_shape=(2, 3, 3), strides=(1, 2, 1), layout="NHWC")),
], ids=lambda v: v.value if isinstance(v, Strategy) else None)
@pytest.mark.parametrize("data", ["plain", "special"])
def test_prefetching_kernels_give_the_same_results(caches, strategy, shape, attrs, data, rng):
    """ROWS_FIRST and NHWC_BLOCKS prefetch the next plane or rows past a fraction of the last-level
    cache (_tuning.prefetch_rows, prefetch_nhwc): with a cache of one byte, forced, against the twin."""
    x = make_array(rng, shape, "float32", special=data == "special")
    want = reference.max_pool(x, **attrs)
    plan = _plan(x.shape, **attrs)
    launch.cache_clear()
    try:
        assert launch(plan, "float32", 1, False, strategy).prefetch is False
        caches(llc=1)
        assert launch(plan, "float32", 1, False, strategy).prefetch is True
        for nt in (1, 2, 3):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs), want)
    finally:
        launch.cache_clear()


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("data", ["plain", "special"])
def test_rows_first_prefetching_in_16_bits(caches, kind, data, rng):
    """ROWS_FIRST's 16-bit planes with the next plane prefetched (a cache of one byte), forced."""
    attrs = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    x = make_array(rng, (2, 5, 14, 33), kind, special=data == "special")
    want = reference.max_pool(x, **attrs)
    launch.cache_clear()
    try:
        caches(llc=1)
        assert launch(_plan(x.shape, **attrs), kind, 1, False, S.ROWS_FIRST).prefetch is True
        for nt in (1, 2, 3):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy=S.ROWS_FIRST, **attrs), want)
    finally:
        launch.cache_clear()


def test_prefetching_from_a_size_per_kernel():
    """With a 32 MiB last-level cache (the tests'), ROWS_FIRST prefetches from 12 MiB of input
    (SqueezeNet's 4.6 MB pool1 does without), NHWC_BLOCKS from 7 MiB per row of H stride (the stem
    at batch 4, 12.8 MB, stride 2: not yet)."""
    launch.cache_clear()
    attrs = dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=True)
    assert launch(_plan((1, 96, 109, 109), **attrs), "float32", 1, False, S.ROWS_FIRST).prefetch is False
    assert launch(_plan((3, 96, 109, 109), **attrs), "float32", 1, False, S.ROWS_FIRST).prefetch is True
    for shape, strides, pads, prefetch in [((4, 112, 112, 64), 2, 1, False), ((5, 112, 112, 64), 2, 1, True),
                                           ((2, 112, 112, 64), 1, 1, False), ((4, 112, 112, 64), 1, 1, True),
                                           ((8, 40, 40, 256), 1, 2, True)]:
        nhwc = dict(kernel_shape=(2 * pads + 1,) * 2, strides=(strides,) * 2, pads=(pads,) * 4, layout="NHWC")
        assert launch(_plan(shape, **nhwc), "float32", 1, False, S.NHWC_BLOCKS).prefetch is prefetch, shape
    launch.cache_clear()


@pytest.mark.parametrize("strategy", [None, S.NHWC_BLOCKS, S.NHWC])
def test_nhwc_empty_input_with_pads(strategy):
    """An empty NHWC input whose pads give a non-empty output: every window is wholly padding. A
    review found NHWC_BLOCKS' launch handing its scratch to the exact loop as the winners' buffer,
    which that loop then wrote past (heap corruption; the sanitizer run would report it)."""
    x = np.zeros((1, 0, 4, 64), np.float32)
    attrs = dict(kernel_shape=(1, 1), pads=(2, 0, 2, 0), layout="NHWC")
    want = reference.max_pool(x, **attrs)
    assert want.shape == (1, 4, 4, 64)
    for nt in (1, 2):
        for _ in range(3):
            assert_same(pooling.max_pool(x, n_threads=nt, _strategy=strategy, **attrs), want)


def test_the_chooser_reaches_every_strategy():
    assert {case[0] for case in CHOOSER_CASES} == set(Strategy)


@pytest.mark.parametrize("kind", ["int8", "uint8", "float16", "bfloat16"])
def test_3d_cases_of_the_value_tests_take_depth_first(kind):
    """test_maxpool_values.test_3d_depth_first_and_its_fallback means to exercise DEPTH_FIRST on
    1- and 2-byte types: check that its shape still gets it, at 1 and 2 threads."""
    plan = _plan((2, 3, 9, 7, 8), (3, 2, 2), (2, 1, 2), (1, 0, 1, 1, 1, 0))
    for nt in (1, 2):
        assert choose_strategy(plan, kind, nt, False) is S.DEPTH_FIRST


def test_forcing_a_strategy_that_cannot_compute_the_call_is_a_value_error(rng):
    x = make_array(rng, (1, 2, 5, 5), "float32")
    with pytest.raises(ValueError, match=r"MaxPool: _strategy='nhwc' cannot compute this call \(layout NCHW"):
        pooling.max_pool(x, 2, _strategy="nhwc")
    with pytest.raises(ValueError, match=r"_strategy='depth_first' cannot compute.*rank 2"):
        pooling.max_pool(x, 2, _strategy=S.DEPTH_FIRST)
    x3 = make_array(rng, (1, 2, 4, 4, 4), "float16")
    with pytest.raises(ValueError, match=r"'depth_first' cannot compute.*return_indices=True"):
        pooling.max_pool(x3, 2, return_indices=True, _strategy="depth_first")
    with pytest.raises(ValueError, match=r"_strategy must be one of \['nhwc', .*got 'fastest'"):
        pooling.max_pool(x, 2, _strategy="fastest")


def test_a_forced_strategy_is_cached_apart_from_the_chosen_one(rng):
    x = make_array(rng, (1, 2, 6, 6), "float32")
    launch.cache_clear()
    chosen = pooling.max_pool(x, 2)
    forced = pooling.max_pool(x, 2, _strategy="separable")
    assert chosen.tobytes() == forced.tobytes()
    assert launch.cache_info().currsize == 2
