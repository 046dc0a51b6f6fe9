"""Col2Im (SPEC 3) against the pure-numpy reference and by hand; out=, threads, dtypes.

The kernel and the reference sum every pixel's terms in the same order (kernel
offsets in row-major order), so they agree bit for bit for every dtype; only
which NaN a sum of two NaNs gives is the hardware's choice.
"""
import math
import sys

import numpy as np
import pytest

import pooling
from conftest import (
    ALL_DTYPES, BFLOAT16, assert_same, assert_same_or_nan, make_any_array, memory_orders, to_dtype,
)
from pooling import _dispatch, reference
from pooling._dtypes import LEGACY_BFLOAT16

IMAGES = {1: (13,), 2: (7, 6), 3: (5, 4, 6), 4: (4, 5, 5, 3)}


def rep(n, *values):
    """`values` cycled to length n: a different value per axis where more are given."""
    return tuple(values[i % len(values)] for i in range(n))


# Explicit attributes for an image of rank n (the form the reference takes).
CASES = {
    "block2": lambda n: dict(block_shape=rep(n, 2)),
    "block1": lambda n: dict(block_shape=rep(n, 1)),
    # VOLO's fold: blocks that cover whole rows for the middle kernel offsets, added as one run
    "same": lambda n: dict(block_shape=rep(n, 3), pads=rep(n, 1) * 2),
    "strides": lambda n: dict(block_shape=rep(n, 3), strides=rep(n, 2, 1, 3)),
    "dilations": lambda n: dict(block_shape=rep(n, 2), dilations=rep(n, 2, 3, 1)),
    "asymmetric_pads": lambda n: dict(block_shape=rep(n, 3), strides=rep(n, 2, 1),
                                      pads=rep(n, 1, 0, 2) + rep(n, 0, 2, 1)),
    # Blocks wholly in the padding: their terms are dropped.
    "pads_ge_block": lambda n: dict(block_shape=rep(n, 2), strides=rep(n, 2, 1),
                                    pads=rep(n, 3, 2) + rep(n, 2, 3)),
    # Stride past the dilated block: pixels no block covers stay 0.
    "gaps": lambda n: dict(block_shape=rep(n, 2, 1), strides=rep(n, 3, 2), dilations=rep(n, 1, 2)),
    "mixed": lambda n: dict(block_shape=rep(n, 2, 1, 3), strides=rep(n, 1, 2, 3),
                            dilations=rep(n, 2, 1, 1), pads=rep(n, 2, 0) + rep(n, 1, 3)),
}


def full_attrs(image, block_shape, strides=None, pads=None, dilations=None):
    n = len(image)
    return dict(block_shape=tuple(block_shape), strides=tuple(strides or rep(n, 1)),
                pads=tuple(pads or rep(n, 0) * 2), dilations=tuple(dilations or rep(n, 1)))


def nblocks(image, block_shape, strides, pads, dilations):
    """Blocks per axis, straight from SPEC 3."""
    n = len(image)
    return tuple((image[i] + pads[i] + pads[i + n] - (block_shape[i] - 1) * dilations[i] - 1)
                 // strides[i] + 1 for i in range(n))


def columns(rng, kind, image, attrs, batch=2, channels=2, special=True):
    """Random columns that fit `image` under `attrs` (full form)."""
    k = math.prod(attrs["block_shape"])
    length = math.prod(nblocks(image, **attrs))
    return make_any_array(rng, (batch, channels * k, length), kind, special)


def run_both(x, image, attrs, **kw):
    got = pooling.col2im(x, image, **attrs, **kw)
    want = reference.col2im(x, image, **attrs)
    return got, want


# Strides of 32 values or more on the last axis: many phases, each with few kernel offsets
# (include/pooling_col2im.h), and blocks shorter than the stride.
SPARSE_IMAGES = {1: (150,), 2: (5, 120), 3: (3, 4, 100), 4: (3, 3, 4, 90)}
SPARSE_CASES = {
    # the overlap-add of a 1-D signal: offsets 0-31, then 32-39, with pads
    "overlap_add": lambda n: dict(block_shape=rep(n - 1, 2) + (40,), strides=rep(n - 1, 1) + (32,),
                                  pads=rep(n - 1, 1) + (3,) + rep(n - 1, 0) + (5,)),
    # 11 offsets per group (10 dilations of 3 < 32), then 1
    "dilated": lambda n: dict(block_shape=rep(n - 1, 3) + (12,), strides=rep(n - 1, 2) + (33,),
                              dilations=rep(n - 1, 1) + (3,)),
    # blocks shorter than the stride: pixels between them stay 0
    "gaps": lambda n: dict(block_shape=rep(n - 1, 1) + (5,), strides=rep(n - 1, 1) + (40,),
                           pads=rep(n - 1, 0) + (7,) + rep(n - 1, 0) + (0,)),
}


@pytest.mark.parametrize("case", sorted(CASES) + sorted(SPARSE_CASES))
@pytest.mark.parametrize("rank", sorted(IMAGES))
@pytest.mark.parametrize("kind", sorted(ALL_DTYPES))
def test_matches_reference(rng, kind, rank, case):
    image, attrs = (SPARSE_IMAGES[rank], SPARSE_CASES[case](rank)) if case in SPARSE_CASES else (
        IMAGES[rank], CASES[case](rank))
    attrs = full_attrs(image, **attrs)
    x = columns(rng, kind, image, attrs)
    got, want = run_both(x, image, attrs)
    assert got.shape == (2, 2) + image
    assert got.dtype == ALL_DTYPES[kind]
    assert_same_or_nan(got, want)


# The gather's forms (include/pooling_col2im.h: a last axis of stride > 1; stride 1 is the scatter,
# which the cases above reach), each reached by the shapes that select it: (image, attrs, form).
# Grids of strides 2-4 with rows of at least a vector are summed in registers (pk_col_regs:
# float32, bfloat16, float16 in the AVX builds); test_forms_match_reference runs them both ways.
# Forced off, they take the general grid, which needs the last axis' phases to fit in a row of
# blocks (ceil(W / stride) <= blocks) and the phases' rows of blocks in its 16 KB buffer; else the
# rows go one at a time.
FORMS = [
    ((28, 28), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "grid, stride 2: registers"),
    ((27, 27), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "grid, odd width"),
    # pk_col_regs: offsets of the last axis 1 and 2 a phase (above), 3 and 2, 2 and 2, all in one
    # phase, many (the counts as they come), a phase of one vector, vectors two at a time with one
    # left, 3-D; strides 3 and 4 (their counts as they come), a phase without offsets, a width that
    # is not whole phases (the last step stores part of its values), phases longer than a row of
    # blocks, and rows whose masked lanes would read past the plane (done by pk_col_row)
    ((9, 40), dict(block_shape=(5, 5), strides=(2, 2), pads=(2, 2, 2, 2)), "registers, k5"),
    ((10, 34), dict(block_shape=(4, 4), strides=(2, 2), pads=(1, 1, 1, 1)), "registers, k4"),
    ((11, 36), dict(block_shape=(3, 3), strides=(3, 2), dilations=(1, 2), pads=(0, 2, 1, 2)),
     "registers, dilated: one phase without sources"),
    ((5, 50), dict(block_shape=(7, 9), strides=(1, 2), pads=(3, 4, 3, 4)), "registers, k9: 5 and 4 offsets"),
    ((6, 16), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "registers, one vector a phase"),
    # phases shorter than a vector (of 8 lanes; the 4-lane builds take them as whole vectors): one
    # step a row, its lanes past the phase masked and its values past the row dropped
    ((6, 14), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "registers, phases of 7"),
    ((9, 28), dict(block_shape=(6, 6), strides=(4, 4), pads=(1, 1, 1, 1)), "registers, stride 4, phases of 7"),
    ((7, 20), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1)), "registers, stride 3, phases of 7"),
    ((5, 8), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "registers, phases of 4"),
    ((6, 9), dict(block_shape=(5, 5), strides=(4, 4)), "registers, stride 4, phases of 3, no pads"),
    ((7, 80), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "registers, five vectors a phase"),
    ((3, 4, 32), dict(block_shape=(2, 3, 3), strides=(1, 1, 2), pads=(0, 1, 1, 0, 1, 1)), "registers, 3-D"),
    ((8, 56), dict(block_shape=(3, 3), strides=(2, 2)), "registers, no pads: phases longer than the blocks"),
    ((9, 56), dict(block_shape=(5, 5), strides=(3, 3), pads=(1, 1, 1, 1)), "registers, stride 3"),
    ((9, 58), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1)), "registers, stride 3, last step cut"),
    ((7, 24), dict(block_shape=(3, 5), strides=(2, 3), pads=(1, 2, 1, 2)), "registers, stride 3, one vector"),
    ((10, 57), dict(block_shape=(7, 7), strides=(4, 4), pads=(3, 3, 3, 3)), "registers, stride 4"),
    ((9, 59), dict(block_shape=(5, 3), strides=(3, 4), pads=(1, 1, 1, 1)),
     "registers, stride 4, a phase without offsets"),
    ((8, 57), dict(block_shape=(8, 8), strides=(4, 4), pads=(2, 2, 2, 2)), "registers, stride 4, phases past the blocks"),
    ((6, 56), dict(block_shape=(6, 6), strides=(3, 3)), "registers, end rows reading past the plane: by rows"),
    ((3, 5, 40), dict(block_shape=(2, 3, 4), strides=(1, 2, 3), pads=(0, 1, 1, 1, 1, 2)), "registers, stride 3, 3-D"),
    ((20, 21), dict(block_shape=(3, 4), strides=(3, 3), pads=(2, 3, 1, 2)), "grid, stride 3"),
    ((17, 19), dict(block_shape=(3, 5), strides=(2, 2), pads=(1, 2, 1, 2)), "grid, columns fixed on both sides"),
    ((17, 19), dict(block_shape=(3, 3), strides=(2, 3), pads=(2, 3, 2, 3), dilations=(2, 3)),
     "grid, dilated, phases without sources"),
    ((12, 40), dict(block_shape=(9, 16), strides=(1, 2), pads=(4, 8, 4, 8)), "grid, 72 sources a phase: two batches"),
    ((300, 64), dict(block_shape=(3, 3), strides=(1, 2), pads=(1, 1, 1, 1)), "grid, several chunks of rows"),
    ((6, 9), dict(block_shape=(2, 3), strides=(1, 2)), "rows: no pads, phases wider than the blocks"),
    ((3, 20000), dict(block_shape=(2, 3), strides=(1, 2), pads=(0, 1, 0, 1)),
     "rows: a row of blocks past the grid buffer, phase rows in chunks"),
    ((4, 5, 6), dict(block_shape=(2, 3, 3), strides=(1, 2, 2), pads=(1, 1, 1, 0, 1, 1)), "3-D grids"),
    ((4, 5, 6), dict(block_shape=(2, 2, 3), strides=(2, 1, 2)), "3-D rows"),
    ((4, 1, 8), dict(block_shape=(2, 1, 3), strides=(1, 3, 2), pads=(0, 1, 1, 0, 1, 1)),
     "3-D grids, no block on the middle axis: two prefixes a row (kx's length, found by the fuzz test)"),
    ((300,), dict(block_shape=(7,), strides=(3,), pads=(2, 2)), "1-D: one row, cut into items"),
    ((3000,), dict(block_shape=(64,), strides=(40,), pads=(5, 9)), "1-D overlap-add: phases in groups"),
    ((9, 10), dict(block_shape=(2, 2), strides=(40, 50)), "strides past the image: one position a phase"),
    # The stores: a row's interior interleaves all its phases at once (strides 2, 3 and 4 each a
    # loop of their own, others one loop), its ends go value by value; a grid whose phase rows are
    # shorter than a vector (1- and 2-byte kinds here) stores its rows as one run, then copies them.
    ((10000, 4), dict(block_shape=(2, 2), strides=(2, 2)), "grid, short rows stored as one run, in parts"),
    ((21, 24), dict(block_shape=(3, 5), strides=(3, 3), pads=(1, 1, 1, 1)), "grid, stride 3: rows whole"),
    ((16, 20), dict(block_shape=(4, 6), strides=(4, 4), pads=(1, 1, 1, 1)), "grid, stride 4: rows whole"),
    ((10, 25), dict(block_shape=(5, 7), strides=(5, 5), pads=(2, 1, 2, 1)), "grid, stride 5: rows whole"),
    ((18, 23), dict(block_shape=(4, 5), strides=(4, 4), pads=(1, 3, 1, 3)), "grid, stride 4, ends by value"),
    ((4001,), dict(block_shape=(8,), strides=(4,), pads=(3, 2)), "1-D stride 4: interior and ends"),
    # Blocks that tile the grid (block = stride, no dilation or begin pads, rows of whole blocks):
    # each pixel copied from its one term, no accumulator.
    ((11, 12), dict(block_shape=(3, 3), strides=(3, 3)), "tiled grid, rows past the blocks zero"),
    ((10, 12), dict(block_shape=(4, 4), strides=(4, 4), pads=(0, 0, 2, 3)), "tiled grid, end pads"),
    ((32, 48), dict(block_shape=(16, 16), strides=(16, 16)), "tiled grid, stride 16"),
    ((4, 9000), dict(block_shape=(2, 2), strides=(2, 2)), "tiled grid, rows wider than the grid buffer"),
    ((5, 6, 8), dict(block_shape=(2, 2, 2), strides=(2, 2, 2)), "tiled 3-D grids"),
    ((30, 30), dict(block_shape=(3, 3), strides=(3, 3), pads=(1, 1, 1, 1)), "tiled grid, begin pads: a window"),
    ((40, 700), dict(block_shape=(3, 3), strides=(3, 3), pads=(1, 2, 1, 0)),
     "tiled grid, begin pads: a kernel row's block rows in several batches"),
    ((17, 19), dict(block_shape=(4, 4), strides=(4, 4), pads=(3, 2, 0, 1)), "tiled grid, pads, uncovered ends"),
    ((9, 10), dict(block_shape=(2, 2), strides=(2, 2), pads=(5, 6, 0, 0)), "tiled grid, pads past the blocks"),
    ((3001,), dict(block_shape=(4,), strides=(4,), pads=(3, 2)), "tiled 1-D, pads, items cut blocks"),
    ((2400,), dict(block_shape=(1200,), strides=(1200,)), "tiled 1-D, blocks of a few KB (past the buffer for complex128)"),
    ((50,), dict(block_shape=(7,), strides=(7,), pads=(3, 0)), "tiled 1-D, positions past the blocks"),
    # rows of under 16 whole blocks go through the buffer too; a chunk of block rows holds all their
    # kernel rows, its image rows written in order, unless only a block row or two fit (k16: then
    # kernel row by kernel row)
    ((28, 28), dict(block_shape=(4, 4), strides=(4, 4)), "tiled grid, short rows of whole blocks"),
    ((40, 300), dict(block_shape=(2, 2), strides=(2, 2), pads=(1, 1, 1, 1)),
     "tiled grid, image rows in order, chunks of block rows"),
    ((34, 224), dict(block_shape=(16, 16), strides=(16, 16), pads=(1, 1, 1, 1)),
     "tiled grid, k16 with pads: kernel row by kernel row"),
    ((30, 400), dict(block_shape=(3, 3), strides=(4, 4), pads=(1, 1, 1, 1)),
     "gapped grid, image rows in order, chunks of one block row"),
    # blocks narrower than the stride leave gaps (k3 s4): copied as the tiled folds, rows and
    # phases in a gap zero, except where the registers serve the 16-bit floats (float32: in vectors)
    ((9, 59), dict(block_shape=(3, 3), strides=(4, 4), pads=(1, 1, 1, 1)), "gapped grid, rows through the buffer"),
    ((12, 56), dict(block_shape=(2, 3), strides=(3, 4)), "gapped grid, whole rows straight from the columns"),
    ((10, 11), dict(block_shape=(1, 1), strides=(2, 2)), "gapped grid, blocks of one pixel"),
    ((9, 28), dict(block_shape=(3, 3), strides=(4, 4), pads=(1, 1, 1, 1)),
     "gapped grid, phases shorter than a vector: not in registers"),
    ((9, 57), dict(block_shape=(3, 3), strides=(4, 4)), "gapped grid, phases past the blocks (1- and 2-byte too)"),
    ((17, 19), dict(block_shape=(2, 3), strides=(4, 4), pads=(3, 2, 0, 1)), "gapped grid, pads, uncovered ends"),
    ((6, 7, 9), dict(block_shape=(1, 2, 2), strides=(2, 3, 3), pads=(0, 1, 0, 1, 0, 1)),
     "gapped 3-D grids, planes in a gap"),
    ((301,), dict(block_shape=(3,), strides=(5,), pads=(2, 1)), "gapped 1-D, items cut blocks"),
    ((5, 2000), dict(block_shape=(3, 3), strides=(3, 3), pads=(1, 1, 1, 1)),
     "tiled grid, a row of blocks near the buffer's size (past it for complex128)"),
    ((5, 6, 8), dict(block_shape=(2, 2, 2), strides=(1, 2, 2)), "3-D grids tiled but two prefixes a grid"),
    ((2, 331), dict(block_shape=(1, 7), strides=(1, 3), pads=(0, 2, 0, 3)), "rows, stride 3: interior and ends"),
]


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("image, attrs, form", FORMS, ids=[f[2] for f in FORMS])
@pytest.mark.parametrize("kind", ["float32", "float64", "float16", "bfloat16", "complex64", "bool", "uint8",
                                  "int16", "int64"])
def test_forms_match_reference(rng, monkeypatch, kind, image, attrs, form, prefetch):
    # prefetch=True: the next plane's columns asked for on every call (by default only for inputs
    # from memory), which must not change a bit; the last plane asks for none.  Without prefetch,
    # grids of strides 2-4 also forced through the general grid (pk_col_regs off) and folds with
    # gaps copied (every dtype); with it, folds with gaps summed (in registers where they serve).
    monkeypatch.setattr(pooling._tuning, "col2im_prefetch", lambda *args: prefetch)
    monkeypatch.setattr(sys.modules["pooling.col2im"], "_REGISTERS", prefetch)
    monkeypatch.setattr(sys.modules["pooling.col2im"], "_GAPS", not prefetch)
    attrs = full_attrs(image, **attrs)
    x = columns(rng, kind, image, attrs, batch=2, channels=3)
    want = reference.col2im(x, image, **attrs)
    for nt in (1, 2, 3):
        assert_same_or_nan(pooling.col2im(x, image, **attrs, n_threads=nt), want)


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("image, attrs", [
    ((56, 56), dict(block_shape=(3, 3), pads=(1, 1, 1, 1))),        # whole rows and rows one short, one run each
    ((30, 40), dict(block_shape=(2, 5), pads=(0, 2, 1, 2))),        # rows a few short, and row by row
    ((5000,), dict(block_shape=(9,), pads=(4, 4))),                 # 1-D: long runs, the prefetch past the end
    ((4, 9, 70), dict(block_shape=(2, 3, 3), dilations=(1, 2, 1), pads=(0, 1, 2, 1, 1, 1))),  # 3-D, dilated
])
def test_scatter_runs_with_and_without_prefetch(rng, monkeypatch, image, attrs, prefetch):
    # The scatter's float32 runs with and without their prefetch ahead (the CPU's setting,
    # _tuning.col2im_run_prefetch), at several thread counts: the same bits as the twin.
    monkeypatch.setattr(sys.modules["pooling.col2im"], "_RUN_PREFETCH", prefetch)
    attrs = full_attrs(image, **attrs)
    x = columns(rng, "float32", image, attrs, batch=2, channels=3)
    want = reference.col2im(x, image, **attrs)
    for nt in (1, 2, 3):
        assert_same_or_nan(pooling.col2im(x, image, **attrs, n_threads=nt), want)


def check_in_room(rng, kind, image, attrs, shapes):
    """For each (batch, channels): at 1-3 threads, the twin's bits, and nothing written past the
    result (64 guard elements after it)."""
    for batch, channels in shapes:
        x = columns(rng, kind, image, attrs, batch=batch, channels=channels)
        want = reference.col2im(x, image, **attrs)
        size = math.prod(want.shape)
        for nt in (1, 2, 3):
            room = np.full(size + 64, 7, dtype=want.dtype)
            out = room[:size].reshape(want.shape)
            pooling.col2im(x, image, **attrs, n_threads=nt, out=out)
            assert_same_or_nan(out, want)
            assert (room[size:] == 7).all()


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("image, attrs", [
    ((9, 58), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1))),   # last step cut: 22 of 24
    ((6, 56), dict(block_shape=(6, 6), strides=(3, 3))),                      # end rows read past a plane
    ((28, 28), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),  # VOLO's fold
    ((10, 57), dict(block_shape=(7, 7), strides=(4, 4), pads=(3, 3, 3, 3))),
    ((9, 28), dict(block_shape=(6, 6), strides=(4, 4), pads=(1, 1, 1, 1))),   # phases shorter than a vector
    ((6, 9), dict(block_shape=(5, 5), strides=(4, 4))),                       # the same, reads past the plane
    ((13, 9), dict(block_shape=(6, 6), strides=(4, 4), pads=(1, 1, 1, 1))),   # a whole last step spans 3 rows
    ((7, 20), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1))),   # stride 3, one step a row
    ((3, 5, 40), dict(block_shape=(2, 3, 4), strides=(1, 2, 3), pads=(0, 1, 1, 1, 1, 2))),
])
def test_register_rows_stay_inside(rng, monkeypatch, kind, image, attrs):
    # The register rows' masked lanes read anywhere in the call's columns (only the end rows of the
    # first and last planes may leave them: pk_col_row then), and a row's last step stores whole
    # vectors past the row where the rows after it are the work item's (written after it), else
    # it is cut and stored in overlapping vectors: on one plane and on several, cut into work
    # items of a few rows at 1-3 threads, nothing past the result is written and the bits are
    # the twin's.
    monkeypatch.setattr(sys.modules["pooling.col2im"], "_REGISTERS", True)
    check_in_room(rng, kind, image, full_attrs(image, **attrs), ((1, 1), (2, 3)))


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("group", [2, 3, 5])
@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("image, attrs", [
    ((28, 28), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),  # VOLO's fold
    ((9, 58), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1))),   # last step cut
    ((6, 56), dict(block_shape=(6, 6), strides=(3, 3))),                      # end rows read past a plane
    ((6, 9), dict(block_shape=(5, 5), strides=(4, 4))),                       # the same, one step a row
    ((13, 9), dict(block_shape=(6, 6), strides=(4, 4), pads=(1, 1, 1, 1))),   # a last step spans 3 rows
    ((10, 57), dict(block_shape=(7, 7), strides=(4, 4), pads=(3, 3, 3, 3))),
])
def test_register_rows_plane_groups(rng, monkeypatch, kind, image, attrs, group, prefetch):
    # A work item of the register rows takes `group` planes, each row's sources found once for all
    # of them (docs/tuning.md#col2im-plane-groups): with the last group short or whole, the end
    # rows of the first and last planes going through pk_col_row, the next group's columns asked
    # for or not, at 1-3 threads, the bits are the twin's and nothing past the result is written.
    col2im = sys.modules["pooling.col2im"]
    monkeypatch.setattr(col2im, "_REGISTERS", True)
    monkeypatch.setattr(col2im, "_GROUP", group)
    monkeypatch.setattr(pooling._tuning, "col2im_prefetch", lambda *args: prefetch)
    # 25 and 26 planes: whole items on 3 threads
    check_in_room(rng, kind, image, full_attrs(image, **attrs), ((5, 5), (2, 13)))


def test_plane_group_rule(caches):
    # Planes whose columns and image fit L1d together, while each thread keeps 8 items to share;
    # one plane an item for calls past a quarter of the LLC.
    group = sys.modules["pooling.col2im"]._group
    caches(l1d=32 << 10, llc=32 << 20)
    assert group(8 << 20, 192 * 4, 192 * 4, 1) == 3      # 10,922 B a plane
    assert group((8 << 20) + 192 * 4, 192 * 4, 192 * 4, 1) == 1
    caches(l1d=32 << 10, llc=4 << 20)
    assert group(1 << 20, 192, 192, 1) == 6
    assert group((1 << 20) + 192, 192, 192, 1) == 1
    caches(l1d=32 << 10)
    assert group(192 * 10_000, 192, 192, 1) == 3
    assert group(192 * 10_000, 192, 192, 8) == 3
    assert group(192 * 10_000, 192, 192, 16) == 1    # 192 items: 12 a thread
    assert group(16 * 10_000, 16, 16, 1) == 2        # 8 items a thread at the most
    assert group(4 * 10_000, 4, 4, 1) == 1
    assert group(192 * 40_000, 192, 192, 1) == 1     # a plane past L1d
    caches(l1d=48 << 10)
    assert group(192 * 10_000, 192, 192, 1) == 4
    caches(l1d=8 << 10)
    assert group(192 * 10_000, 192, 192, 1) == 1


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("image, attrs", [
    ((28, 28), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((28, 28), dict(block_shape=(4, 4), strides=(3, 3), pads=(1, 1, 1, 1))),
    ((9, 58), dict(block_shape=(5, 5), strides=(3, 3), pads=(2, 2, 2, 2))),
    ((28, 28), dict(block_shape=(6, 6), strides=(4, 4), pads=(1, 1, 1, 1))),
    ((10, 57), dict(block_shape=(7, 7), strides=(4, 4), pads=(3, 3, 3, 3))),
])
@pytest.mark.parametrize("group", [1, 3])
def test_register_rows_nan_bits_are_the_general_grids(rng, monkeypatch, kind, image, attrs, group):
    # The register rows sum a step without the NaN rule's mask and sum it again with the mask
    # where a sum ends NaN: NaNs of several payloads (quiet and signalling, both signs) and
    # infinities of both signs (inf - inf is NaN) give every bit the general grid gives, one plane
    # a work item or several.
    monkeypatch.setattr(sys.modules["pooling.col2im"], "_GROUP", group)
    attrs = full_attrs(image, **attrs)
    x = columns(rng, kind, image, attrs, batch=1, channels=4, special=False)
    width = 16 if kind != "float32" else 32
    bits = x.view(np.uint16 if width == 16 else np.uint32)
    if width == 32:
        specials = [0x7FC00001, 0xFFC12345, 0x7F800003, 0xFF8000F0, 0x7F800000, 0xFF800000]
    else:
        expo, quiet = HALF[kind], QUIET[kind]
        specials = [expo | quiet | 0x01, 0x8000 | expo | quiet | 0x13, expo | 0x03, 0x8000 | expo | 0x11, expo,
                    0x8000 | expo]
    # channel 0: NaNs and infinities at random; channel 1: infinities only; 2: one NaN; 3: none
    planes = bits.reshape(4, -1)
    for c, (count, choices) in enumerate([(40, specials), (30, specials[4:]), (1, specials[:1])]):
        at = rng.integers(0, planes.shape[1], size=count)
        planes[c, at] = rng.choice(np.array(choices, dtype=bits.dtype), size=count)
    col2im = sys.modules["pooling.col2im"]
    results = {}
    for registers in (False, True):
        monkeypatch.setattr(col2im, "_REGISTERS", registers)
        results[registers] = [pooling.col2im(x, image, **attrs, n_threads=nt) for nt in (1, 2)]
    want = results[False][0]
    assert_same_or_nan(want, reference.col2im(x, image, **attrs))
    assert np.isnan(want.astype(np.float32)).any() and np.isinf(want.astype(np.float32)).any()
    for got in results[True] + results[False][1:]:
        assert_same(got.view(bits.dtype), want.view(bits.dtype))


def test_run_prefetch_setting():
    # Off in the AVX2 build on the CPUs measured slower with it there (Zen 4 and Zen 5 server parts);
    # on elsewhere, and in the other builds (Zen 5's AVX-512 build ran 1.8x slower without it).
    setting = pooling._tuning.col2im_run_prefetch
    zen4, zen5 = ("AuthenticAMD", 0x19, 0x11), ("AuthenticAMD", 0x1A, 0x02)
    assert not setting(zen4, "avx2") and not setting(zen5, "avx2")
    assert setting(zen5, "avx512") and setting(zen5, "baseline") and setting(zen4, "avx512")
    assert setting(("AuthenticAMD", 0x19, 0x01), "avx2") and setting(("GenuineIntel", 6, 0xCF), "avx2")
    assert setting(("ARM", 0, 0), "baseline")
    assert sys.modules["pooling.col2im"]._RUN_PREFETCH == setting()


def test_prefetch_rule(monkeypatch):
    # Planes of at most a quarter of L2, whatever the input's size.
    from pooling import _caches
    monkeypatch.setattr(_caches, "CACHES", _caches.CACHES._replace(l2=1 << 20))
    assert pooling._tuning.col2im_prefetch(1 << 18)
    assert not pooling._tuning.col2im_prefetch((1 << 18) + 1)


@pytest.mark.parametrize("kind", ["float32", "float64", "bfloat16", "int8", "complex64", "complex128"])
@pytest.mark.parametrize("image, block, strides, pads", [
    # one plane of a long 1-D signal: work items cut the only axis, so a block's
    # terms go together on one side of a cut and one at a time on the other
    ((20000,), (512,), (128,), (100, 60)),
    # a 2-D image of few planes: work items cut the rows, each adds its own
    ((60, 1500), (3, 100), (2, 64), (1, 30, 2, 40)),
    # tiled and gapped grids through the buffer, items cutting a plane's rows inside a chunk
    ((40, 300), (2, 2), (2, 2), (1, 1, 1, 1)),
    ((34, 224), (16, 16), (16, 16), (1, 1, 1, 1)),
    ((57, 28), (4, 4), (4, 4), (0, 0, 0, 0)),
    ((61, 400), (3, 3), (4, 4), (1, 1, 1, 1)),
    # runs one offset at a time, strided and contiguous, cut the same way
    ((20000,), (5,), (2,), (1, 0)),
    ((20000,), (3,), (1,), (1, 1)),
    # VOLO's fold: rows one short of whole go as one run, the pixels between put back
    ((300, 57), (3, 3), (1, 1), (1, 1, 1, 1)),
])
def test_runs_any_n_threads(rng, kind, image, block, strides, pads):
    attrs = full_attrs(image, block, strides=strides, pads=pads)
    x = columns(rng, kind, image, attrs, batch=1, channels=1)
    want = reference.col2im(x, image, **attrs)
    results = [pooling.col2im(x, image, **attrs, n_threads=nt) for nt in (1, 2, 3, 7)]
    assert_same_or_nan(results[0], want)
    for got in results[1:]:
        assert_same(got, results[0])


@pytest.mark.parametrize("kind", ["float32", "float64", "int16", "bfloat16", "float16", "bool", "complex128"])
def test_memory_orders(rng, kind):
    image = (6, 5)
    attrs = full_attrs(image, (2, 3), strides=(1, 2), pads=(1, 0, 0, 1))
    x = columns(rng, kind, image, attrs, special=False)
    want = pooling.col2im(x, image, **attrs)
    assert_same(want, reference.col2im(x, image, **attrs))
    for name, variant in memory_orders(x):
        got = pooling.col2im(variant, image, **attrs)
        assert got.flags.c_contiguous, name
        assert_same(got, want)


def test_inputs_never_modified(rng):
    image = (6, 5)
    attrs = full_attrs(image, (2, 2), pads=(1, 1, 1, 1))
    x = columns(rng, "float16", image, attrs)
    before = x.copy()
    shape_arr = np.array(image)
    pooling.col2im(x, shape_arr, np.array(attrs["block_shape"]), pads=attrs["pads"])
    assert_same(x, before)
    assert_same(shape_arr, np.array(image))
    x.flags.writeable = False
    pooling.col2im(x, image, attrs["block_shape"], pads=attrs["pads"])


@pytest.mark.parametrize("kind", ["float32", "float16", "int64", "bool"])
def test_n_threads_bit_identical(rng, kind):
    # Few planes and a large image: work items split the first axis (and the
    # cache-sized cap splits it further), so the cut moves with n_threads.
    image = (300, 301)
    attrs = full_attrs(image, (3, 2), strides=(1, 2), pads=(1, 2, 2, 1), dilations=(2, 1))
    x = columns(rng, kind, image, attrs, batch=1, channels=1)
    want = reference.col2im(x, image, **attrs)
    results = [pooling.col2im(x, image, **attrs, n_threads=nt) for nt in (1, 2, 3, -1, None)]
    assert_same_or_nan(results[0], want)
    for got in results[1:]:
        assert_same(got, results[0])


def test_many_planes_threads(rng):
    image = (9, 8)
    attrs = full_attrs(image, (3, 3), pads=(1, 1, 1, 1))
    x = columns(rng, "float32", image, attrs, batch=5, channels=7)
    one = pooling.col2im(x, image, **attrs, n_threads=1)
    assert_same_or_nan(one, reference.col2im(x, image, **attrs))
    assert_same(pooling.col2im(x, image, **attrs, n_threads=2), one)


# ---------------------------------------------------------------------------
# Values by hand.
# ---------------------------------------------------------------------------

def test_hand_1d_overlap():
    # Two blocks of 2 on an image of 3: the middle pixel gets k=1 of block 0
    # and k=0 of block 1.
    x = np.array([[[1.0, 10.0], [2.0, 20.0]]])
    y = pooling.col2im(x, [3], [2])
    assert_same(y, np.array([[[1.0, 12.0, 20.0]]]))


def test_hand_2d_pads_and_dilation():
    # image 3x3, block 2x2 dilated 2 -> effective 3x3, pads 1 all round: 3x3 blocks.
    k, length = 4, 9
    x = np.arange(k * length, dtype=np.float64).reshape(1, k, length)
    y = pooling.col2im(x, (3, 3), (2, 2), pads=1, dilations=2)
    expect = np.zeros((3, 3))
    for kh, kw in np.ndindex(2, 2):
        for bh, bw in np.ndindex(3, 3):
            h, w = bh - 1 + 2 * kh, bw - 1 + 2 * kw
            if 0 <= h < 3 and 0 <= w < 3:
                expect[h, w] += x[0, kh * 2 + kw, bh * 3 + bw]
    assert_same(y[0, 0], expect)


def test_bool_is_logical_or():
    x = np.ones((1, 2, 2), dtype=bool)  # every middle term is True + True
    y = pooling.col2im(x, [3], [2])
    assert y.dtype == np.bool_
    assert_same(y, np.array([[[True, True, True]]]))
    assert y.view(np.uint8).max() == 1  # a real bool, not a count of 2


def test_integers_wrap_around():
    x = np.array([[[100, 100], [100, 100]]], dtype=np.int8)
    assert pooling.col2im(x, [3], [2])[0, 0].tolist() == [100, -56, 100]
    u = np.array([[[0, 100], [200, 0]]], dtype=np.uint8)
    assert pooling.col2im(u, [3], [2])[0, 0].tolist() == [0, 44, 0]
    big = np.full((1, 2, 2), 2**63 - 1, dtype=np.int64)
    assert pooling.col2im(big, [3], [2])[0, 0, 1] == -2


@pytest.mark.parametrize("kind, terms, once", [
    # float16 step by step: 2048 + 1 is a tie that rounds back to 2048, twice.
    ("float16", [2048.0, 1.0, 1.0], 2050.0),
    # bfloat16 has 8 significant bits: 256 + 1 is a tie, back to 256.
    ("bfloat16", [256.0, 1.0, 1.0], 258.0),
    # Rounded once, 65504 + 8 + 8 = 65520 is the tie above float16's largest value: inf.
    ("float16", [65504.0, 8.0, 8.0], math.inf),
])
def test_16bit_rounded_once(kind, terms, once):
    # Image 1, block 3, pads 2 and 2: three blocks, and pixel 0 receives
    # k=0 of block 2, k=1 of block 1 and k=2 of block 0, in that order.
    x = np.zeros((1, 3, 3))
    x[0, 0, 2], x[0, 1, 1], x[0, 2, 0] = terms
    x = to_dtype(x, kind)
    y = pooling.col2im(x, [1], [3], pads=[2, 2])
    assert y.shape == (1, 1, 1) and y.dtype == ALL_DTYPES[kind]
    assert float(y.astype(np.float32).ravel()[0]) == once
    stepwise = np.zeros((), ALL_DTYPES[kind])
    for t in to_dtype(np.array(terms), kind):
        stepwise = (stepwise + t).astype(ALL_DTYPES[kind])
    assert float(stepwise) != once  # what rounding after every addition gives


def test_negative_zero_sums_to_positive_zero():
    # Y starts as +0.0 and 0.0 + -0.0 = +0.0 (SPEC 3: zeros, then add).
    x = np.full((1, 1, 4), -0.0, dtype=np.float32)
    y = pooling.col2im(x, [4], [1])
    assert not np.signbit(y).any()
    assert_same(y, reference.col2im(x, [4], [1]))


@pytest.mark.parametrize("kind", ["float32", "complex64"])
@pytest.mark.parametrize("image, attrs", [
    ((5, None), dict(block_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),   # stride 2
    ((5, None), dict(block_shape=(3, 3), strides=(2, 2))),                       # ... no pads
    ((4, None), dict(block_shape=(2, 5), strides=(2, 3), pads=(0, 2, 1, 2))),   # stride 3
    ((4, None), dict(block_shape=(3, 6), strides=(2, 4), pads=(1, 0, 1, 1))),   # stride 4
    ((None,), dict(block_shape=(3,), strides=(2,), pads=(1, 1))),                 # one row
    ((4, None), dict(block_shape=(3, 3), strides=(4, 4), pads=(1, 1, 1, 1))),   # gaps
    ((None,), dict(block_shape=(2,), strides=(3,), pads=(1, 0))),                 # gaps, one row
    ((4, None), dict(block_shape=(2, 2), strides=(2, 2))),                       # tiled, rows whole
    ((7, None), dict(block_shape=(3, 3), strides=(3, 3), pads=(1, 1, 1, 1))),   # tiled, begin pads
    ((9, None), dict(block_shape=(4, 4), strides=(4, 4), pads=(2, 1, 0, 3))),   # tiled, stride 4
])
def test_strided_runs_of_every_length_keep_each_sum(rng, kind, image, attrs):
    # Every row width from 1 to a few vectors: pk_col_regs (the 2-D geometries, float32, from a
    # vector a phase on: masks at the first and the last vector, a last vector that overlaps the
    # one before, a last step that stores part of its values, phases longer than a row of blocks
    # without pads), the general grid or rows (narrower widths, and complex64), the copies of folds
    # with gaps (blocks narrower than the stride) and of tiled ones (rows whole, or block rows
    # copied together and cut: float32 in vectors for strides 2-4), and a 1-D row, with
    # -0.0 (a sum starts from +0, so it never gives -0.0), integers (sums exact in any order:
    # every bit compared) and a NaN at random places.
    for width in range(1, 70):
        img = tuple(width if v is None else v for v in image)
        a = full_attrs(img, **attrs)
        if min(nblocks(img, **a)) < 1:  # no block fits (no pads, width < block)
            continue
        x = rng.integers(-3, 4, size=(1, 2 * math.prod(a["block_shape"]),
                                      math.prod(nblocks(img, **a)))).astype(ALL_DTYPES[kind])
        x[x == 0] = -0.0
        x.flat[rng.integers(0, x.size, size=2)] = np.nan
        got, want = run_both(x, img, a)
        parts = got.view(np.float32)
        assert not np.signbit(parts[parts == 0]).any()
        assert_same_or_nan(got, want)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_16bit_every_pattern_through_the_kernel(kind):
    # Block 1: y = round(0 + widen(x)) for each of the 65,536 patterns.
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x = bits.view(ALL_DTYPES[kind]).reshape(1, 1, -1)
    y = pooling.col2im(x, [65536], [1])
    assert_same_or_nan(y, reference.col2im(x, [65536], [1]))
    ybits = y.view(np.uint16).ravel()
    inf = 0x7C00 if kind == "float16" else 0x7F80
    nan = (bits & 0x7FFF) > inf
    assert (ybits[nan] & 0x7FFF > inf).all()
    assert (ybits[nan] >> 15 == bits[nan] >> 15).all()  # the sign stays
    plain = ~nan & (bits != 0x8000)
    assert (ybits[plain] == bits[plain]).all()
    assert ybits[0x8000] == 0  # -0.0 + the +0.0 start is +0.0


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("image, block, pads", [
    ((3, None), (2, 3), (1, 1, 0, 1)),   # rows of the width, less one or two at the pads
    ((None,), (3,), (1, 1)),             # 1-D: one run a kernel offset
    ((2, None), (1, 4), (0, 2, 0, 1)),   # whole rows joined into one run, and shorter ones
])
def test_16bit_scatter_runs_of_every_length(rng, kind, image, block, pads):
    # Stride 1 (the scatter): each kernel offset's blocks add as contiguous runs, widened a
    # register of terms at a time, then half a register, then the last few one by one
    # (pk_col_add_f16 / pk_col_add_bf16), and the float32 sums narrowed a register at a time.
    # Widths 1-40 give every remainder; -0.0 (+0 + -0.0 stays +0.0), NaN at random places, and
    # random bit patterns whose sums round (ties, overflow, subnormals): the twin's bits.
    for width in range(1, 41):
        img = tuple(width if v is None else v for v in image)
        a = full_attrs(img, block, pads=pads)
        if min(nblocks(img, **a)) < 1:
            continue
        shape = (2, 3 * math.prod(block), math.prod(nblocks(img, **a)))
        small = to_dtype(rng.integers(-3, 4, size=shape).astype(np.float64), kind)
        small[small == 0] = -0.0
        small.flat[rng.integers(0, small.size, size=2)] = np.nan
        patterns = rng.integers(0, 65536, size=shape, dtype=np.uint16).view(ALL_DTYPES[kind])
        for x in (small, patterns):
            for nt in (1, 2):
                got, want = run_both(x, img, a, n_threads=nt)
                assert_same_or_nan(got, want)
        got = run_both(small, img, a)[0].astype(np.float32)  # (a tiny negative sum of patterns may round to -0.0)
        assert not np.signbit(got[got == 0]).any()


@pytest.mark.parametrize("form", ["gather 1-D", "gather 2-D", "registers 2-D", "tiled 1-D", "tiled 2-D",
                                  "tiled 2-D padded", "gapped 2-D"])
@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_16bit_every_pattern_through_the_strided_paths(kind, form, n_threads):
    # The gather by phases (k3 s2), whose 16-bit runs widen eight terms a step where the build has
    # F16C and whose stores narrow a register of sums a step (pk_f32_to_f16_run, pk_f32_to_bf16_run);
    # the register rows (k3 s2, rows of at most 2048 values), which widen a register of terms a step
    # and narrow a row's sums in every vector build;
    # and the tiled copies (block = stride), which make each value a sum of its one term eight a step
    # (block <= stride: gaps are zero).  Gather and registers: every pattern is a term (odd positions:
    # its only one; even positions: the first of two, the second another pattern, so the sums round
    # at ties, overflow and underflow to subnormals).  Tiled: every pattern is a pixel's one term.
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    pads = None
    if form == "gather 1-D":
        image, block, strides = (2 * 65536 + 1,), (3,), (2,)
        x = np.stack([bits, bits, np.roll(bits, 4099)])
    elif form in ("gather 2-D", "registers 2-D"):
        # rows of up to PK_COL_REG_ROW values go through the register rows, in every build
        width = 1024 if form == "gather 2-D" else 512
        image, block, strides = (2 * (65536 // width) + 1, 2 * width + 1), (3, 3), (2, 2)
        x = np.stack([np.roll(bits, 97 * k) for k in range(9)])
    elif form == "tiled 1-D":
        image, block, strides = (4 * 16384,), (4,), (4,)
        x = np.stack([np.roll(bits, 16384 * k)[:16384] for k in range(4)])
    elif form == "gapped 2-D":
        image, block, strides = (3 * 128 - 1, 3 * 256 - 1), (2, 2), (3, 3)
        x = np.stack([np.roll(bits, 11 * k)[::2] for k in range(4)])
    else:
        image, block, strides = (2 * 128, 2 * 256), (2, 2), (2, 2)
        x = np.stack([np.roll(bits, 11 * k)[::2] for k in range(4)])
        if form == "tiled 2-D padded":  # the rows go through a buffer, the image's window copied
            image, pads = (2 * 128 - 1, 2 * 256 - 1), (0, 1, 1, 0)
    x = x.view(ALL_DTYPES[kind])[None]
    attrs = dict(strides=strides) if pads is None else dict(strides=strides, pads=pads)
    y = pooling.col2im(x, image, block, n_threads=n_threads, **attrs)
    want = reference.col2im(x, image, block, **attrs)
    assert_same_or_nan(y, want)
    rank = len(image)
    one = (Ellipsis,) + (slice(1, None, 2),) * rank if form.startswith(("gather", "registers")) else Ellipsis
    assert_same(y[one], want[one])  # one term each: exact bits, NaN included


# ---------------------------------------------------------------------------
# 16-bit conversions (include/pooling_half_conv.h) over every bit pattern.
# ---------------------------------------------------------------------------

HALF = {"float16": 0x7C00, "bfloat16": 0x7F80}
QUIET = {"float16": 0x0200, "bfloat16": 0x0040}


def _widen_bits_numpy(bits, kind):
    """float32 bits of the 16-bit patterns, by numpy / ml_dtypes."""
    return bits.view(ALL_DTYPES[kind]).astype(np.float32).view(np.uint32)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_widen_every_pattern(kind):
    from pooling import _runtime

    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    got = np.empty(65536, dtype=np.float32)
    _runtime.half_to_float32(bits, got, HALF[kind])
    want = _widen_bits_numpy(bits, kind)
    nan = (bits & 0x7FFF) > HALF[kind]
    assert_same(got.view(np.uint32)[~nan], want[~nan])
    # NaN: the payload moves up unchanged (a converter may set the quiet bit).
    quiet32 = np.uint32(0x00400000)
    assert_same(got.view(np.uint32)[nan] | quiet32, want[nan] | quiet32)
    assert np.isnan(got[nan]).all()


def _round_inputs(kind):
    """float32 values that exercise rounding around every 16-bit pattern.

    Each pattern widened (exact), the midpoint to the next pattern up in
    magnitude (a tie), a float32 ulp either side of it, plus random float32
    bit patterns and the edges of subnormal, overflow and NaN.
    """
    mags = np.arange(0x8000, dtype=np.uint32).astype(np.uint16)
    lo = mags.view(ALL_DTYPES[kind]).astype(np.float32).view(np.uint32)
    finite = mags[: HALF[kind] + 1].view(ALL_DTYPES[kind]).astype(np.float64)
    mid = ((finite[:-1] + finite[1:]) / 2).astype(np.float32).view(np.uint32)  # exact: 12 bits
    rng = np.random.default_rng(7)
    edges = np.array([0x33000000, 0x33000001, 0x32FFFFFF, 0x38800000, 0x387FFFFF, 0x477FEFFF,
                      0x477FF000, 0x477FF001, 0x47800000, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF,
                      0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x00000001, 0x007FFFFF],
                     dtype=np.uint32)
    pos = np.concatenate([lo, mid, mid - 1, mid + 1, edges,
                          rng.integers(0, 2**31, size=1 << 18, dtype=np.uint32)])
    return np.concatenate([pos, pos | np.uint32(0x80000000)]).view(np.float32)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_round_every_pattern(kind):
    from pooling import _runtime

    values = _round_inputs(kind)
    got = np.empty(values.size, dtype=np.uint16)
    _runtime.float32_to_half(values, got, HALF[kind])
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(ALL_DTYPES[kind]).view(np.uint16)
    # The kernels' narrowing a register at a time (this process's build: test_simd.py runs the others),
    # over the whole array and every length up to a few registers from several starts: the scalar rule's bits.
    runs = np.empty_like(got)
    _dispatch.core.narrow_16bit(values, runs, HALF[kind])
    assert_same(runs, got)
    for start in (0, 1, 7, 4099):
        for n in range(41):
            part = np.full(n + 8, 0xABCD, dtype=np.uint16)
            _dispatch.core.narrow_16bit(values[start:start + n], part, HALF[kind])
            assert_same(part[:n], got[start:start + n])
            assert (part[n:] == 0xABCD).all()
    bits = values.view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    assert_same(got[~nan], want[~nan])
    # NaN stays NaN, quiet, with its sign and the top of its payload.
    assert ((got[nan] & 0x7FFF) > HALF[kind]).all()
    assert (got[nan] & QUIET[kind]).all()
    assert (got[nan] >> 15 == (bits[nan] >> 31)).all()
    shift = 13 if kind == "float16" else 16
    payload = 0x3FF if kind == "float16" else 0x7F
    assert ((got[nan] & payload) == ((bits[nan] >> shift) & payload) | QUIET[kind]).all()


# ---------------------------------------------------------------------------
# Shapes, N = 0, dtypes, out=.
# ---------------------------------------------------------------------------

def test_output_shape_function():
    assert pooling.col2im_output_shape((2, 18, 25), (5, 5), (3, 3), pads=1) == (2, 2, 5, 5)
    assert pooling.col2im_output_shape([0, 4, 16], np.array([5, 5]), np.array([2, 2])) == (0, 1, 5, 5)
    assert pooling.col2im_output_shape((1, 3, 3), [7], [3], strides=2) == (1, 1, 7)
    shape = pooling.col2im_output_shape((1, 4, 5), [6, 6], [2, 2], dilations=[1, 5])
    assert shape == (1, 1, 6, 6) and all(type(v) is int for v in shape)
    with pytest.raises(ValueError, match="negative"):
        pooling.col2im_output_shape((1, -4, 5), [6, 6], [2, 2])
    with pytest.raises(TypeError, match="x_shape"):
        pooling.col2im_output_shape((1, 4.0, 5), [6, 6], [2, 2])


@pytest.mark.parametrize("kind", ["float32", "bool", "bfloat16"])
def test_empty_batch(kind):
    x = np.zeros((0, 8, 6), dtype=ALL_DTYPES[kind])
    y = pooling.col2im(x, (3, 4), (2, 2))
    assert y.shape == (0, 2, 3, 4) and y.dtype == x.dtype
    out = np.empty((0, 2, 3, 4), dtype=x.dtype)
    assert pooling.col2im(x, (3, 4), (2, 2), out=out) is out


def test_attribute_spellings(rng):
    image = (6, 7)
    attrs = full_attrs(image, (2, 2), strides=(2, 2), pads=(1, 1, 1, 1), dilations=(2, 2))
    x = columns(rng, "float32", image, attrs)
    want = pooling.col2im(x, image, **attrs)
    for image_shape in ([6, 7], np.array([6, 7]), np.array([6, 7], dtype=np.int32), (np.int64(6), 7)):
        got = pooling.col2im(x, image_shape, np.array([2, 2], dtype=np.uint8), strides=2, pads=1,
                             dilations=np.array([2, 2]))
        assert_same(got, want)
    assert_same(pooling.col2im(x, image, [2, 2], strides=2, pads=1, dilations=2, opset=18), want)


def test_bfloat16_both_spellings(rng):
    image = (5, 4)
    attrs = full_attrs(image, (2, 2))
    x = columns(rng, "bfloat16", image, attrs)
    got = pooling.col2im(x, image, **attrs)
    assert got.dtype == BFLOAT16
    legacy = pooling.col2im(x.view(np.uint16).view(LEGACY_BFLOAT16), image, **attrs)
    assert legacy.dtype == LEGACY_BFLOAT16
    assert_same(legacy.view(np.uint16), got.view(np.uint16))
    # A real uint16 with the same bits is summed as integers.
    ints = pooling.col2im(x.view(np.uint16), image, **attrs)
    assert ints.dtype == np.uint16
    assert_same(ints, reference.col2im(x.view(np.uint16), image, **attrs))


def test_byteswapped_output_native(rng):
    x = np.arange(2 * 4 * 9, dtype=">i4").reshape(2, 4, 9)
    y = pooling.col2im(x, (4, 4), (2, 2))
    assert y.dtype == np.dtype("=i4")
    assert_same(y, reference.col2im(x.astype("=i4"), (4, 4), (2, 2)))


@pytest.mark.parametrize("dtype", [object, "U3", "S2", "datetime64[s]", "m8[s]", np.longdouble])
def test_unsupported_dtypes(dtype):
    x = np.zeros((1, 4, 4), dtype=dtype)
    with pytest.raises(TypeError, match=r"Col2Im: x has dtype"):
        pooling.col2im(x, (3, 3), (2, 2))


def test_out(rng):
    image = (6, 5)
    attrs = full_attrs(image, (3, 2), strides=(2, 1), pads=(1, 0, 1, 0))
    x = columns(rng, "float64", image, attrs)
    want = reference.col2im(x, image, **attrs)
    out = np.full((2, 2) + image, 7.0)  # stale values must not survive
    got = pooling.col2im(x, image, **attrs, out=out)
    assert got is out
    assert_same_or_nan(out, want)
    bad = [
        np.empty((2, 2, 6, 4)),                       # shape
        np.empty((2, 2) + image, dtype=np.float32),   # dtype
        np.empty((2, 2, 5, 6)).transpose(0, 1, 3, 2),  # not C-contiguous
        [[0.0]],                                      # not an array
    ]
    readonly = np.empty((2, 2) + image)
    readonly.flags.writeable = False
    bad.append(readonly)
    for o in bad:
        error = ValueError if isinstance(o, np.ndarray) else TypeError  # a non-array is the wrong type
        with pytest.raises(error, match="Col2Im: out"):
            pooling.col2im(x, image, **attrs, out=o)
    x = np.zeros((1, 1, 16))
    with pytest.raises(ValueError, match="overlap"):
        pooling.col2im(x, [16], [1], out=x.reshape(1, 1, 16))


def test_out_16bit(rng):
    image = (5, 5)
    attrs = full_attrs(image, (3, 3), pads=(1, 1, 1, 1))
    x = columns(rng, "float16", image, attrs)
    out = np.empty((2, 2) + image, dtype=np.float16)
    assert pooling.col2im(x, image, **attrs, out=out) is out
    assert_same_or_nan(out, reference.col2im(x, image, **attrs))
