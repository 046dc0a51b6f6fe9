"""MaxPool's strategies by name: the ways the compiled kernels can compute a call.

Its own module so that pooling._tuning's rules can name them without importing the strategies'
builders (pooling._maxpool_strategies), which consult those rules.
"""
import enum


class Strategy(enum.Enum):
    """How a MaxPool call is computed (docs/design.md has the table with the kernels' names)."""
    NHWC = "nhwc"                        # channels-last kernel over output rows (NHWC, ranks 1-3)
    NHWC_BLOCKS = "nhwc_blocks"          # float32 NHWC: blocks of channels in registers (ranks 1-3)
    PLANES = "planes"                    # whole planes through padded flat passes (NCHW, ranks 1-2)
    TILES = "tiles"                      # windows that tile the input exactly, as flat passes (NCHW)
    INTERLEAVED = "interleaved"          # blocks of planes channels-last in padded scratch (NCHW, ranks 1-2)
    ROWS_FIRST = "rows_first"            # float32 windows up to 3x3: window rows first, then W (NCHW, ranks 1-2)
    NARROW = "narrow"                    # float32 planes whose rows fit 1-3 vectors, in registers (NCHW, ranks 1-2)
    FUSED = "fused"                      # fused two-pass kernel over N*C planes (NCHW, ranks 1-3)
    DEPTH_FIRST = "depth_first"          # 3-D: reduce the depth window first, then pool in 2-D
    DEPTH_SPLIT = "depth_split"          # 3-D: FUSED on every depth slice, then along depth
    SEPARABLE = "separable"              # any rank: one axis at a time, last axis first (NCHW)
    NHWC_TRANSPOSED = "nhwc_transposed"  # SEPARABLE on the NCHW transpose, Indices re-encoded
