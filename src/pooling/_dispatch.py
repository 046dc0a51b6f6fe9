"""Which compiled kernels run: the baseline build, or the same kernels built for AVX2 or AVX-512.

Wheels must run on every CPU of their platform, so ``pooling._core`` is compiled
for the baseline instruction set (x86-64: SSE2).  Where the compiler can,
setup.py also builds ``pooling._core_avx2`` from the same source with AVX2 and
FMA, and it is used when this CPU has them; and ``pooling._core_avx512`` with
AVX-512 and 512-bit vectors, whose kernels are used only where they were measured
faster on this CPU's microarchitecture (`WIDE_FASTER`): most kernels measured no
faster or slower in it.  ``POOLING_SIMD=baseline``, ``avx2`` or ``avx512`` (read at
import) runs every kernel from that build; the tests run each build the CPU can.

Where the AVX2 build is in use, a few kernels come from the baseline build or the AVX-512
build on the microarchitectures where they were measured faster there (`BASELINE_FASTER`,
`WIDE_FASTER`, `kernels_for`).  All builds share pooling._runtime's one thread pool, so
mixing them costs nothing.
"""
import os

from . import _core as _baseline
from ._runtime import cpu_id, cpu_supports_avx2, cpu_supports_avx512

LEVELS = ("auto", "baseline", "avx2", "avx512")


def _load_avx2():
    try:
        from . import _core_avx2
    except ImportError:  # the compiler could not target AVX2
        return None
    return _core_avx2


def _load_avx512():
    try:
        from . import _core_avx512
    except ImportError:  # the compiler could not target AVX-512
        return None
    return _core_avx512


def _choose(wanted):
    if wanted not in LEVELS:
        raise ImportError(f"pooling: POOLING_SIMD must be one of {list(LEVELS)}, got {wanted!r}")
    # Ask the CPU first: each SIMD module's own initialisation is compiled for its instructions.
    if wanted == "avx512":
        wide = _load_avx512() if cpu_supports_avx512() else None
        if wide is None:
            raise ImportError("pooling: POOLING_SIMD=avx512, but this build or CPU has no AVX-512 kernels")
        return wide, "avx512"
    avx2 = None if wanted == "baseline" or not cpu_supports_avx2() else _load_avx2()
    if avx2 is not None:
        return avx2, "avx2"
    if wanted == "avx2":
        raise ImportError("pooling: POOLING_SIMD=avx2, but this build or CPU has no AVX2 kernels")
    return _baseline, "baseline"


wanted = os.environ.get("POOLING_SIMD", "auto").strip().lower() or "auto"
core, level = _choose(wanted)
available = (("baseline",) + (("avx2",) if cpu_supports_avx2() and _load_avx2() is not None else ())
             + (("avx512",) if cpu_supports_avx512() and _load_avx512() is not None else ()))


# (vendor, CPU families) -> MaxPool kernels whose baseline (SSE2) build measured faster than their
# AVX2 build there, without Indices, as (strategy, W stride, element sizes).  Zen 3 (AMD EPYC
# family 0x19, 2-core KVM), `python bench/compare.py --against src --before-env POOLING_SIMD=avx2
# --zoo -k strides=2` at one and two threads (ratios of the time with these rules to all-AVX2):
# FUSED with a W stride of 2, float32 and uint8, 0.74-0.98 (ResNet stem, GoogLeNet, SqueezeNet,
# MTCNN, 1-D k3 s2); TILES float32 0.78-0.92 (VGG pool5, MTCNN P-Net, 3-D k2 s2, 1-D k2 s2).  Not
# listed because they measured slower in the baseline build: TILES uint8 (1.83-1.93), FUSED
# with Indices (k2 s2 float32, 1.16-1.34).  The cause is the vector width: a stride-2 load at
# 256 bits is cross-lane vpermd and blends, at 128 bits one shufps per pair of vectors; Zen 1/2
# (family 0x17, 256-bit operations split in two 128-bit halves) gain even less from 256 bits.
# Intel cores measured faster in AVX2 on FUSED, and stay there.
# Zen 5 (family 0x1A, 2-core KVM, AVX-512 capable; the same commands, 5-7 rounds): only FUSED with a W
# stride of 2 in uint8 stays slower in AVX2 (ResNet stem uint8 1.07-1.08 at one and two threads);
# its float32 form is faster in AVX2 there (1-D k3 s2 0.80-0.82), as every other row but TILES float32
# on small planes (VGG pool5 1x512x14x14 1.05-1.11, MTCNN P-Net 1.03-1.05), whose larger inputs gain
# from AVX2 (VGG pool3 b8 0.81, C3D pool2 0.84, 3-D k2 s2 0.81): TILES float32 stays in AVX2.
# Intel family 6 (a 16-core Xeon of model 0xCF, Emerald Rapids, under gVisor; `python bench/compare.py
# --against src --before-env POOLING_SIMD=baseline --zoo --threads 1 --rounds 3`): TILES float32, which
# the earlier Intel tuning predates, took longer in AVX2 than in the baseline build on every k2 s2 row
# (VGG pool1 1.16, pool3 b8 1.17, pool5 1.26, MTCNN P-Net 1.23, C3D pool1 1.44, C3D pool2 1.02), so it
# runs from the baseline build there; every other row of the sweep but the uint8 stem (1.11, FUSED,
# which the earlier tuning measured faster in AVX2 and keeps there) was as fast or faster in AVX2
# (geometric mean 0.79).
# (TILES' float32 W pass was rewritten after these measurements, as ROWS_FIRST's in-lane split; on Zen 5
# that made the AVX2 build 0.48-1.00 of the baseline build's time on the k2 s2 rows. The Zen 1-4 and Intel
# rules above were not measured again.)
# A rule's optional fourth field is the least input, in bytes, it applies to.  Zen 5 again (the same
# kernels in one process, alternating, medians; one / two threads): TILES float32 with a W stride of 2
# streaming an input of 49 MiB from memory took 1.04-1.08 / 1.12-1.13 of the baseline build's time in
# the AVX2 build, and 0.93-1.07 / 1.07-1.14 in the AVX-512 one (C3D pool1 1x64x16x112x112 (1,2,2),
# 4x64x224x224 and 16x64x112x112 k2 s2); at 24 MiB, which the L3 cache holds, the AVX2 build took
# 0.78-0.91 / 0.83-0.88 of it (8x64x112x112, C3D pool2), at 6 MiB 0.64 / 0.66.  perf puts both builds'
# time on the W pass's loads.  So from 32 MiB that kernel runs from the baseline build there.
BASELINE_FASTER = {
    ("AuthenticAMD", (0x17, 0x19)): (("fused", 2, (1, 4)), ("tiles", 2, (4,))),
    ("AuthenticAMD", (0x1A,)): (("fused", 2, (1,)), ("tiles", 2, (4,), 32 << 20)),
    ("GenuineIntel", (6,)): (("tiles", 2, (4,)),),
}


# (vendor, CPU families) -> MaxPool kernels whose AVX-512 build measured faster than their AVX2
# build there, without Indices, as BASELINE_FASTER's entries.  The AVX-512 build is the same source
# compiled with -mavx512f/vl/dq -mprefer-vector-width=512 (not BW: setup.py says why): the loops the
# compiler vectorises widen to 16 float32 lanes, the hand-written 256-bit code does not (NARROW's
# header widens its own vectors to 512 bits there).  Zen 5 (family 0x1A, 2-core
# KVM; `python bench/compare.py --against src --before-env POOLING_SIMD=avx512 --zoo`, and forced
# PLANES on the zoo's stride-1 shapes, interleaved processes, medians): PLANES with a W stride of
# 1 in float32, YOLO SPPF/SPP k5-k13 on 13x13 to 40x40 planes, 0.75-0.92 of the AVX2 build's time
# at one and two threads.  Not listed because they measured slower in it: PLANES in float16
# (1.28) and int8 (1.14-1.17), whole-plane windows (1.07-1.10), k2 s1 on 13x13 (1.05-1.11), and
# most other kernels of the sweep (INTERLEAVED 7x7 1.22, 1-D k3 s2 1.24, Col2Im 1.16 in an earlier
# run).  Not measured on Intel cores nor on Zen 4 (which runs 512-bit operations in two halves).
# NARROW (float32 planes whose rows fit three vectors) runs from the AVX-512 build where it names
# NARROW and its strips of 16 lanes hold the rows in fewer lanes, or as many in fewer strips, than
# the AVX2 build's of 8 (_maxpool_strategies._narrow_core): on Zen 5, one / two threads, 1x512x13x13 k2 s1 0.70 / 0.67 of
# ROWS_FIRST's time (the AVX2 build's two strips 1.21 / 1.02), YOLOv5 SPPF 1x256x20x20 k5 s1 p2
# 0.76 / 0.82 of PLANES' (from the AVX-512 build too), YOLOv3 SPP k5 1x512x19x19 0.70 / 0.72,
# Inception-v3 1x288x35x35 k3 s1 p1 0.89 / 0.84 of ROWS_FIRST's, SPPF 1x256x40x40 0.64 / 0.63.
# NHWC_BLOCKS (float32 channels-last, channels in registers; its loops widen to 512 bits there) with
# W strides 1 and 2, same method, one / two threads: ResNet stem NHWC b8 0.77 / 0.81 of the AVX2
# build's time, batch 1 0.90 / 0.93, YOLOv5 SPPF NHWC b8 0.97 / 0.92, 1x20x20x256 k5 1.06 / 0.70,
# k2 s2 on 1x56x56x256 1.06 / 1.00 (the one loss, within the noise band).
# Intel family 6 has no rules: on one Xeon (model 0xCF, Emerald Rapids, 16 cores under gVisor) the
# whole AVX-512 build took 0.88 of the AVX2 build's time over the sweep at one thread (NARROW on
# 28x28 0.38, SPPF NHWC b8 0.68, PLANES' SPPF 0.66-0.76; slower: 7x7 planes in 16 lanes 1.23, SPP
# k13 1.12, 1-D k3 s2 1.13, stem NHWC 1.07), but the table keys on the family, which also holds
# parts whose cores slow down for 512-bit operations (Skylake-SP), not measured.
WIDE_FASTER = {
    ("AuthenticAMD", (0x1A,)): (("planes", 1, (4,)), ("narrow", 1, (4,)),
                                 ("nhwc_blocks", 1, (4,)), ("nhwc_blocks", 2, (4,))),
}


def _cpu_rules(table):
    vendor, family = cpu_id()
    for (v, families), rules in table.items():
        if v == vendor and family in families:
            return rules
    return ()


def _baseline_rules():
    return _cpu_rules(BASELINE_FASTER)


# Only when the build was chosen automatically: POOLING_SIMD=avx2 runs every kernel in AVX2.
rules = _baseline_rules() if level == "avx2" and wanted == "auto" else ()
wide_rules = (_cpu_rules(WIDE_FASTER) if level == "avx2" and wanted == "auto" and "avx512" in available
              else ())


def _matches(rules_, strategy, w_stride, itemsize, input_bytes):
    return any(name == strategy and stride == w_stride and itemsize in sizes
               and input_bytes >= (least[0] if least else 0)
               for name, stride, sizes, *least in rules_)


def kernels_for(strategy, w_stride, itemsize, with_indices=False, input_bytes=0):
    """The compiled build to run `strategy` with (a MaxPool strategy's value), for a W stride,
    element size, Indices or not and the input's bytes: the process's build, or the baseline or
    AVX-512 one where `rules` or `wide_rules` says it is faster (calls without Indices only)."""
    if with_indices:
        return core
    if _matches(rules, strategy, w_stride, itemsize, input_bytes):
        return _baseline
    if _matches(wide_rules, strategy, w_stride, itemsize, input_bytes):
        return _load_avx512()
    return core
