# The kernels of _core.pyx, compiled by setup.py a second time with AVX2 and FMA
# enabled.  pooling._dispatch imports this module instead of pooling._core on
# CPUs that have them (single kernels may still come from the baseline or AVX-512
# build: pooling._tuning.RULES); wheels still run on every CPU through the baseline build.
include "_core.pyx"
