"""Index formats and the MaxPool gradient against "onnx" Indices and torch, interleaved rounds.

    PYTHONPATH=$PWD/src python bench/index_formats.py [--threads 1 2] [--rounds 31]

Prints the median and the minimum of each case (milliseconds) per thread count; torch runs with
the same thread count (torch.set_num_threads).  On a loaded machine the minimum is the steadier
figure.
"""
import argparse
import time

import numpy as np

import pooling


def cases(nt):
    import torch
    torch.set_num_threads(nt)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64, 112, 112), dtype=np.float32)
    attrs = dict(kernel_shape=3, strides=2, pads=1)
    y, onnx = pooling.max_pool(x, return_indices=True, **attrs)
    plane = pooling.convert_indices(onnx, x.shape, from_format="onnx", to_format="plane")
    g = rng.standard_normal(y.shape, dtype=np.float32)
    g16 = g.astype(np.float16)
    tx, tg, ti, ty = (torch.from_numpy(a) for a in (x, g, plane, y))
    backward = torch.ops.aten.max_pool2d_with_indices_backward
    return {
        "max_pool indices onnx": lambda: pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs),
        "max_pool indices plane": lambda: pooling.max_pool(x, return_indices=True, index_format="plane",
                                                           n_threads=nt, **attrs),
        "max_pool indices tf": lambda: pooling.max_pool(x, return_indices=True, index_format="tf",
                                                        n_threads=nt, **attrs),
        "torch max_pool2d indices": lambda: torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True),
        "max_pool_grad plane float32": lambda: pooling.max_pool_grad(g, plane, x.shape, index_format="plane",
                                                                     n_threads=nt),
        "max_pool_grad onnx float32": lambda: pooling.max_pool_grad(g, onnx, x.shape, n_threads=nt),
        "max_pool_grad plane float16": lambda: pooling.max_pool_grad(g16, plane, x.shape, index_format="plane",
                                                                     n_threads=nt),
        "torch max_pool2d backward": lambda: backward(tg, tx, [3, 3], [2, 2], [1, 1], [1, 1], False, ti),
        "max_unpool onnx": lambda: pooling.max_unpool(y, onnx, 3, strides=2, pads=1, output_shape=x.shape,
                                                      n_threads=nt),
        "max_unpool plane": lambda: pooling.max_unpool(y, plane, 3, strides=2, pads=1, output_shape=x.shape,
                                                       index_format="plane", n_threads=nt),
        "torch max_unpool2d": lambda: torch.nn.functional.max_unpool2d(ty, ti, 3, 2, 1,
                                                                       output_size=x.shape[2:]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    for nt in args.threads:
        run = cases(nt)
        times = {name: [] for name in run}
        for f in run.values():
            f()
        for _ in range(args.rounds):
            for name, f in run.items():
                t = time.perf_counter()
                f()
                times[name].append(time.perf_counter() - t)
        for name, ts in times.items():
            print(f"{nt} thread(s)  {name:30s} median {np.median(ts) * 1e3:7.2f} ms   min {min(ts) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
