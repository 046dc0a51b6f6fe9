# The kernels of _core.pyx, compiled by setup.py a third time with AVX-512 (F, BW, VL, DQ) and
# 512-bit vectors preferred.  pooling._dispatch takes from this module only the kernels measured
# faster in it on this CPU's microarchitecture (_dispatch.WIDE_FASTER), or every kernel under
# POOLING_SIMD=avx512; the hand-written vector code stays 256-bit, the loops the compiler
# vectorises widen.
include "_core.pyx"
