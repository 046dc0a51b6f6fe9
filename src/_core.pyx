"""Kernels of pooling-kernels.

Every function here receives arrays that the Python layer has validated,
allocated and laid out (C-contiguous, native byte order) plus plain integer
geometry; MaxPool's launches take the geometry once and check each call's
arrays against it.  Kernels allocate nothing but a launch's scratch, never
raise, release the GIL and split their work with ``pk_parallel`` (include/pooling_pool.h:
a work-claiming pool; OpenMP's settings still give the default thread count).  The rules
they implement are in docs/behaviour.md; the Python layer (``src/pooling``) decides every
shape, pad and dtype question.

Built twice by setup.py from the same files: as pooling._core (baseline
instruction set) and as pooling._core_avx2 (_core_avx2.pyx includes this file;
compiled with AVX2 and FMA).  Helpers that are not kernels and are the same in
both builds are in pooling._runtime (_runtime.pyx), built once.
"""
# The kernels are `include`d, not cimported from .pxd modules, so that the
# compare helpers inline into every loop and the AVX2 twin needs nothing of its
# own.  Where each of pooling.maxpool's strategies has its loop:
#   NHWC kernel                 MaxPoolNHWC      kernels/maxpool_nhwc.pxi
#   NHWC, channels in registers MaxPoolNHWC(blocks=True), same file
#   whole planes (ranks 1-2)    MaxPoolPlanes    kernels/maxpool_planes.pxi
#   exact tiles (ranks 1-3)     MaxPoolTiles     kernels/maxpool_tiles.pxi
#   interleaved (ranks 1-2)     MaxPoolInterleaved  kernels/maxpool_interleaved.pxi
#   rows first (ranks 1-2)      MaxPoolRows      kernels/maxpool_rows.pxi
#   narrow planes (ranks 1-2)   MaxPoolNarrow    kernels/maxpool_narrow.pxi
#   fused two-pass (ranks 1-3)  MaxPool3d        kernels/maxpool_fused.pxi
#   depth-first 3-D             MaxPool3d(depth_first=True), same file
#   depth-split 3-D             MaxPool3d on slices + max_pool_axis along depth
#   separable (any rank)        max_pool_axis    kernels/maxpool_separable.pxi
#   NHWC by transpose           max_pool_axis on the transposed copy, same file
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
