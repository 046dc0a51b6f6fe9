"""``python -m pooling``: configuration, self-checks against the reference, timings.

Exit status 0 only if every check passed.
"""
import statistics
import sys
import time

import numpy as np

from . import col2im, max_pool, max_unpool, reference, show_config

# The ResNet stem MaxPool: 3x3 windows, stride 2, pad 1, on 64 channels of 112x112.
STEM = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
# Col2Im after a 3x3 pad-1 convolution's im2col: 64 channels of 56x56 images.
COL2IM = dict(image_shape=(56, 56), block_shape=(3, 3), pads=(1, 1, 1, 1))


def _same(a, b):
    """Bit-for-bit equality (so NaN payloads and -0.0 count)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _median_ms(fn, min_time=0.2, repeats=7):
    """Median wall time of fn() in ms after a warm-up (this machine warms up over ~0.5 s)."""
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        fn()
    times = []
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while True:
            fn()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time / repeats:
                break
        times.append(elapsed / count * 1e3)
    return statistics.median(times)


def cases():
    """(name, fast call, reference call) for every operator's built-in check."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 112, 112)).astype(np.float32)
    ref_y, ref_i = reference.max_pool(x, **STEM, return_indices=True)
    # MaxUnpool of a k2 s2 MaxPool result back to 8x64x56x56.
    pooled, where = max_pool(rng.standard_normal((8, 64, 56, 56)).astype(np.float32), 2, strides=2,
                             return_indices=True)
    ref_up = reference.max_unpool(pooled, where, 2, strides=2)
    cols = rng.standard_normal((8, 576, 3136), dtype=np.float32)
    return [
        ("MaxPool 1x64x112x112 k3 s2 p1", lambda **kw: max_pool(x, **STEM, **kw), lambda: ref_y),
        ("MaxPool 1x64x112x112 k3 s2 p1 +Indices",
         lambda **kw: max_pool(x, **STEM, return_indices=True, **kw), lambda: (ref_y, ref_i)),
        ("MaxUnpool 8x64x28x28 -> 8x64x56x56 k2 s2",
         lambda **kw: max_unpool(pooled, where, 2, strides=2, **kw), lambda: ref_up),
        ("Col2Im 8x576x3136 k3 p1 -> 8x64x56x56", lambda **kw: col2im(cols, **COL2IM, **kw),
         lambda: reference.col2im(cols, **COL2IM)),
    ]


def main():
    show_config()
    print()
    ok = True
    rows = []
    for name, fast, ref in cases():
        got, want = fast(), ref()
        if isinstance(want, tuple):
            passed = all(_same(g, w) for g, w in zip(got, want))
        else:
            passed = _same(got, want)
        ok &= passed
        print(f"check  {'ok  ' if passed else 'FAIL'}  {name}")
        rows.append((name, _median_ms(lambda: fast(n_threads=1)), _median_ms(fast)))
    print()
    print(f"| {'operation':<42} | 1 thread ms | all threads ms |")
    print(f"|{'-' * 44}|-------------|----------------|")
    for name, one, many in rows:
        print(f"| {name:<42} | {one:11.3f} | {many:14.3f} |")
    print()
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
