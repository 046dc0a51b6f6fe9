"""Larger than memory: max-pool downsampling of a lazily generated uint8 label volume with Dask.

    python bench/dask_volume.py                                  # the full case: 32 GiB, (1, 1, 2048, 4096, 4096)
    python bench/dask_volume.py --shape 1 1 64 512 512 --chunks 1 1 16 128 128   # a quick one

Each case runs in its own process, on Dask's threaded scheduler with one worker per core; its wall
time (of the compute), its process's CPU time (user + system, whole process: the figure to compare
on a shared machine) and its peak resident memory (the child's ru_maxrss) are reported:

- ``generate``: only makes the volume and takes its maximum (no checksum), the floor every case pays;
- ``coarsen k2 s2``: ``da.coarsen(np.max, x, {2: 2, 3: 2, 4: 2})``, what Dask offers today;
- ``pooling.dask k2 s2``: ``pooling.dask.max_pool(x, 2, strides=2)``, the same result;
- ``pooling.dask k3 s2 p1``: ``pooling.dask.max_pool(x, 3, strides=2, pads=1)``, which coarsen cannot do.

The volume is made block by block from the global coordinates of each block, never whole, the
same for every chunking. Each result is reduced lazily to a uint64 checksum (its sum) and its
maximum, so no output is ever held whole either; the two k2 s2 checksums must agree.
bench/test_dask_volume.py runs a small version against the in-memory call.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

CASES = ("generate", "coarsen k2 s2", "pooling.dask k2 s2", "pooling.dask k3 s2 p1")


def labels(block, block_info=None):
    """The uint8 label block at its place in the volume: piecewise constant boxes of varied sizes,
    a function of the global (z, y, x) only."""
    (z0, z1), (y0, y1), (x0, x1) = block_info[None]["array-location"][2:]
    z = ((np.arange(z0, z1) * 7 // 5) % 256).astype(np.uint8)
    y = ((np.arange(y0, y1) * 3 // 13) % 256).astype(np.uint8)
    x = ((np.arange(x0, x1) // 11 * 5) % 256).astype(np.uint8)
    out = np.empty(block.shape, np.uint8)
    np.add(z[:, None], y[None, :], out=out[0, 0, :, :, 0])   # (z, y) plane, then ^ x along x
    np.bitwise_xor(out[0, 0, :, :, :1], x, out=out[0, 0])
    return out


def volume(shape, chunks):
    """The lazy label volume."""
    import dask.array as da

    template = da.empty(shape, dtype=np.uint8, chunks=chunks)
    return template.map_blocks(labels, dtype=np.uint8)


def result(case, x):
    """The lazy array a case computes."""
    import dask.array as da

    import pooling.dask

    if case == "generate":
        return x
    if case == "coarsen k2 s2":
        return da.coarsen(np.max, x, {2: 2, 3: 2, 4: 2})
    if case == "pooling.dask k2 s2":
        return pooling.dask.max_pool(x, 2, strides=2)
    return pooling.dask.max_pool(x, 3, strides=2, pads=1)


def run_one(case, shape, chunks):
    """Compute one case's checksum and maximum; (seconds, checksum, maximum, shape, tasks)."""
    import dask

    y = result(case, volume(shape, chunks))
    start = time.perf_counter()
    checksum = y.max() if case == "generate" else y.sum(dtype=np.uint64)
    checksum, top = dask.compute(checksum, y.max(), scheduler="threads", num_workers=os.cpu_count())
    return time.perf_counter() - start, int(checksum), int(top), y.shape, len(y.__dask_graph__())


def measure(case, shape, chunks):
    """Run a case in a child process: its figures and peak RSS in MiB."""
    command = [sys.executable, __file__, "--one", case, "--shape", *map(str, shape),
               "--chunks", *map(str, chunks)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{case} failed with exit status {child.returncode}")
    seconds, checksum, top, out_shape, tasks = eval(out)  # our own child's repr of a tuple
    return dict(case=case, seconds=seconds, checksum=checksum, max=top, shape=out_shape, tasks=tasks,
                peak_mib=usage.ru_maxrss / 1024, cpu=usage.ru_utime + usage.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", type=int, nargs=5, default=[1, 1, 2048, 4096, 4096])
    parser.add_argument("--chunks", type=int, nargs=5, default=[1, 1, 64, 1024, 1024])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(repr(run_one(args.one, tuple(args.shape), tuple(args.chunks))))
        return
    gib = np.prod(args.shape) / 2**30
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(f"volume {tuple(args.shape)} uint8 ({gib:.1f} GiB; this machine: {total:.1f} GiB of memory, "
          f"{os.cpu_count()} cores), chunks {tuple(args.chunks)}, threaded scheduler\n")
    print("| case | output shape | time (s) | CPU time (s) | GiB/s in | peak RSS (MiB) | tasks in graph | checksum |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for case in args.cases:
        row = measure(case, args.shape, args.chunks)
        rows.append(row)
        print(f"| {case} | {row['shape']} | {row['seconds']:.1f} | {row['cpu']:.1f} | {gib / row['seconds']:.2f} | "
              f"{row['peak_mib']:.0f} | {row['tasks']} | {'-' if case == 'generate' else row['checksum']} |",
              flush=True)
    k2 = {r["case"]: r["checksum"] for r in rows if "k2 s2" in r["case"]}
    if len(k2) == 2 and len(set(k2.values())) != 1:
        raise SystemExit(f"the k2 s2 results differ: {k2}")


if __name__ == "__main__":
    main()
