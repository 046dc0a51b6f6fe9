"""Kernels of pooling-kernels.

Every function here receives arrays that the Python layer has validated,
allocated and laid out (C-contiguous, native byte order) plus plain integer
geometry; MaxPool's launches take the geometry once and check each call's
arrays against it.  Kernels allocate nothing but a launch's scratch, never
raise, release the GIL and split their work with ``pk_parallel`` (include/pooling_pool.h:
a work-claiming pool; OpenMP's settings still give the default thread count).  The rules
they implement are in docs/behaviour.md; the Python layer (``src/pooling``) decides every
shape, pad and dtype question.

Built three times by setup.py from the same files: as pooling._core (baseline
instruction set), as pooling._core_avx2 (_core_avx2.pyx includes this file;
compiled with AVX2 and FMA) and as pooling._core_avx512 (_core_avx512.pyx; AVX-512
F, VL and DQ), the last two where the compiler can target them.  Helpers that are
not kernels and are the same in every build are in pooling._runtime (_runtime.pyx),
built once.
"""
# The kernels are `include`d, not cimported from .pxd modules, so that the
# compare helpers inline into every loop and the AVX2 and AVX-512 builds need
# nothing of their own.  Which strategy computes a call is chosen by
# pooling._maxpool_strategies.choose_strategy, and which build runs its kernel by
# pooling._tuning.kernels_for.  Where each strategy (pooling._strategy.Strategy)
# has its loop:
#   NHWC             MaxPoolNHWC      kernels/maxpool_nhwc.pxi
#   NHWC_BLOCKS      MaxPoolNHWC(blocks=True), same file
#   PLANES           MaxPoolPlanes    kernels/maxpool_planes.pxi
#   TILES            MaxPoolTiles     kernels/maxpool_tiles.pxi
#   INTERLEAVED      MaxPoolInterleaved  kernels/maxpool_interleaved.pxi
#   ROWS_FIRST       MaxPoolRows      kernels/maxpool_rows.pxi
#   NARROW           MaxPoolNarrow    kernels/maxpool_narrow.pxi
#   FUSED            MaxPool3d        kernels/maxpool_fused.pxi
#   DEPTH_FIRST      MaxPool3d(depth_first=True), same file
#   DEPTH_SPLIT      MaxPool3d or MaxPoolRows on slices, then max_pool_axis along depth
#                    (maxpool_fused.pxi or maxpool_rows.pxi, maxpool_separable.pxi)
#   SEPARABLE        max_pool_axis    kernels/maxpool_separable.pxi
#   NHWC_TRANSPOSED  max_pool_axis on the transposed copy, same file
include "kernels/common.pxi"            # cimports, extern blocks, kinds, compare helpers, glossary
include "kernels/extension_info.pxi"    # build_info, pool_stats: facts of this build
include "kernels/maxpool_launch.pxi"    # what MaxPool3d and MaxPoolNHWC share (_Launch, Geom, scratch)
include "kernels/maxpool_fused.pxi"     # MaxPool3d and its two-pass and depth-first loops
include "kernels/maxpool_planes.pxi"    # MaxPoolPlanes: small planes through padded whole-plane passes
include "kernels/maxpool_tiles.pxi"     # MaxPoolTiles: windows that tile the input, as flat passes
include "kernels/maxpool_interleaved.pxi"  # MaxPoolInterleaved: blocks of small planes, channels-last in scratch
include "kernels/maxpool_rows.pxi"       # MaxPoolRows: float32 planes, window rows first, then W in registers
include "kernels/maxpool_narrow.pxi"     # MaxPoolNarrow: float32 planes whose rows fit one vector
include "kernels/maxpool_nhwc.pxi"      # MaxPoolNHWC and its channels-last loops
include "kernels/maxpool_separable.pxi" # max_pool_axis
include "kernels/maxunpool.pxi"         # max_unpool
include "kernels/col2im.pxi"            # col2im
include "kernels/maxpool_grad.pxi"     # max_pool_grad
include "kernels/bodies.pxi"          # pk_parallel's bodies, one per loop (setup.py renders bodies.pxi.in)
