"""MaxUnpool in the channels-last layout (SPEC 2, NHWC [ext])."""
import numpy as np
import pytest

import pooling

from conftest import POOL_DTYPES, assert_same, make_array


def to_nhwc(x):
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=2, strides=2), dict(kernel_shape=3, strides=2, pads=1),
                                   dict(kernel_shape=3, strides=2, ceil_mode=True)],
                         ids=["k2s2", "k3s2p1", "k3s2ceil"])
def test_nhwc_round_trip(rng, kind, rank, attrs):
    """max_unpool(*max_pool(x, NHWC), output_shape=x.shape) puts each pooled value back at its origin."""
    shape = (2, 3) + (7, 6, 5)[:rank]
    x = to_nhwc(make_array(rng, shape, kind, special=False))
    y, i = pooling.max_pool(x, layout="NHWC", return_indices=True, **attrs)
    unpool = {k: v for k, v in attrs.items() if k != "ceil_mode"}
    back = pooling.max_unpool(y, i, layout="NHWC", output_shape=x.shape, **unpool)
    want = np.zeros_like(x)
    want.reshape(-1)[i.reshape(-1)] = y.reshape(-1)
    assert_same(back, want)
    hit = np.zeros(x.size, bool)
    hit[i.reshape(-1)] = True
    assert_same(back.reshape(-1)[hit], x.reshape(-1)[hit])  # values back at their origins


@pytest.mark.parametrize("kind", ["float32", "bfloat16", "int8"])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_nhwc_equals_transposed_nchw(rng, kind, n_threads):
    x = make_array(rng, (3, 4, 8, 8), kind, special=False)  # even: inferred shape == x.shape
    y, i = pooling.max_pool(x, 2, strides=2, return_indices=True)
    want = pooling.max_unpool(y, i, 2, strides=2)
    # NCHW offsets re-encoded as offsets into the NHWC output.
    channels, plane = want.shape[1], int(np.prod(want.shape[2:]))
    image_channel, pixel = np.divmod(i, plane)
    image, channel = np.divmod(image_channel, channels)
    ih = to_nhwc((image * plane + pixel) * channels + channel)
    got = pooling.max_unpool(to_nhwc(y), ih, 2, strides=2, layout="NHWC", n_threads=n_threads)
    assert got.shape == (3, 8, 8, 4)
    assert_same(got, to_nhwc(want))


def test_nhwc_duplicates_last_wins_and_cross_image_indices(rng):
    x = np.arange(1, 2 * 2 * 2 * 3 + 1, dtype=np.float32).reshape(2, 2, 2, 3)  # N=2, 2x2, C=3
    i = np.zeros(x.shape, np.int64)  # every element to offset 0 of image 0: the last one wins
    for n_threads in (1, 2):
        y = pooling.max_unpool(x, i, 2, strides=2, layout="NHWC", n_threads=n_threads)
        assert y.shape == (2, 4, 4, 3)
        assert y.reshape(-1)[0] == x.reshape(-1)[-1] and np.count_nonzero(y) == 1


def test_nhwc_shapes_and_errors():
    x = np.zeros((2, 3, 4, 5), np.float32)
    assert pooling.max_unpool_output_shape(x.shape, 2, strides=2, layout="NHWC") == (2, 6, 8, 5)
    assert pooling.max_unpool_output_shape(x.shape, 2, output_shape=(2, 7, 9, 5), layout="NHWC") == (2, 7, 9, 5)
    with pytest.raises(ValueError, match=r"MaxUnpool: output_shape \[2, 5, 7, 9\] must keep N and C"):
        pooling.max_unpool_output_shape(x.shape, 2, output_shape=(2, 5, 7, 9), layout="NHWC")
    with pytest.raises(ValueError, match="MaxUnpool: indices.* is outside"):
        pooling.max_unpool(x, np.full(x.shape, 2 * 6 * 8 * 5, np.int64), 2, strides=2, layout="NHWC")
