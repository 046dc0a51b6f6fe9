# The kernels of _core.pyx, compiled by setup.py a third time with AVX-512 (F, VL and DQ, not BW:
# setup.py's _avx512_flags says why) and 512-bit vectors preferred.  pooling._dispatch takes from
# this module only the kernels that pooling._tuning.RULES names for this CPU model
# (pooling._tuning.kernels_for), or every kernel under POOLING_SIMD=avx512.  The loops the compiler
# vectorises widen to 512 bits, and so does include/pooling_narrow.h (NARROW, NHWC_BLOCKS); the other
# hand-written vector code stays 256-bit (docs/design.md#simd-builds-and-dispatch).
include "_core.pyx"
