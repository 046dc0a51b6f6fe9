# ===========================================================================
# common.pxi: what every kernel file of pooling._core shares.
#
# Every cimport and `cdef extern` block of the kernels is here, once, so that
# the operator files below read top to bottom without declarations; then the
# element types, the MaxPool kinds, and the small inline compare helpers that
# the MaxPool strategies share (inlined into each of their loops, which is
# why they live in an include file and not in a cimported .pxd module).
#
# Glossary (where a term is used first):
#   kind        the element type a job runs in, as a small integer (KIND_* below,
#               PK_COL_FLOAT.. in include/pooling_col2im.h); a job's body switches on it
#               once per claimed chunk and calls the fused worker specialised by a typed NULL tag
#               (`_units(<float*>NULL, ...)`): the only specialisation mechanism
#               of the kernels.  The Python layer names kinds by C type name
#               (_KINDS; max_pool_axis[ctype], MaxPool3d(ctype, ...)).
#   taps        the offsets t of a window along one axis; a tap is valid when
#               base + t*dilation lies inside the input ([t0, t1), _taps).
#   exact key   behaviour.md §2.4's order (_gt): NaN above all, first maximum wins, -0.0
#               ties +0.0.
#   cheap key   a faster compare that agrees with the exact one unless a value
#               is odd (_keep with exact=False): maxps for float and double, the
#               int16 fast key for 16-bit floats.
#   odd         a value the cheap key gets wrong: NaN, and -0.0 for 16-bit floats
#               (_odd, _special: whether a row holds one).
#   ring        MaxPool3d's row buffer: input rows reduced along W, g.brows slots
#               per depth tap, indexed by row & (brows - 1) (maxpool_fused.pxi).
#   slab        a depth slice (H x W) of one plane, or (col2im) the rows of an
#               image one work item writes.
#   plane       one (n, c) image of an NCHW array; the unit of MaxUnpool's parts.
#   work item   (unit) the smallest piece of a job one thread runs: some output
#               rows of one plane (MaxPool3d), one output row (MaxPoolNHWC), one
#               output row of A x O (separable), a part (MaxUnpool), a plane's
#               slab (Col2Im).
#   chunk       the smallest number of work items a pool thread claims at once
#               (include/pooling_pool.h; pooling._threads.chunk_size).
#   job         a struct with one call's arrays and geometry that pk_parallel hands
#               to its body function on every thread.
#   launch      a MaxPool call plan fixed at construction (maxpool_launch.pxi).
# ===========================================================================

cimport cython
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.math cimport INFINITY
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
                          uintptr_t, INT16_MIN, INT32_MIN, INT64_MIN)
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)

cdef extern from "pooling_omp.h":
    int PK_OPENMP

cdef extern from "pooling_half.h":
    enum:
        PK_F16_INF
        PK_BF16_INF
    bint PK_UNORDERED(double a, double b) noexcept nogil
    uint16_t pk_half_key(uint16_t h, uint16_t inf_bits) noexcept nogil
    bint pk_half_isnan(uint16_t h, uint16_t inf_bits) noexcept nogil
    int16_t pk_half_fast_key(uint16_t h) noexcept nogil
    bint pk_f32_tie_odd(float v) noexcept nogil
    bint pk_f64_tie_odd(double v) noexcept nogil

cdef extern from "pooling_half_conv.h":
    float pk_f16_to_f32(uint16_t h) noexcept nogil
    float pk_bf16_to_f32(uint16_t h) noexcept nogil
    uint16_t pk_f32_to_f16(float f) noexcept nogil
    uint16_t pk_f32_to_bf16(float f) noexcept nogil
    void pk_f32_to_f16_run(uint16_t* y, const float* a, Py_ssize_t n) noexcept nogil
    void pk_f32_to_bf16_run(uint16_t* y, const float* a, Py_ssize_t n) noexcept nogil

cdef extern from "pooling_interleave.h":
    enum:
        PK_IL_BYTES         # bytes of one interleaved pixel (strategy INTERLEAVED)
    void pk_il_in_uint8_t(const void* x, void* t, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_in_uint16_t(const void* x, void* t, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_in_uint32_t(const void* x, void* t, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_in_uint64_t(const void* x, void* t, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_out_uint8_t(const void* v, void* y, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_out_uint16_t(const void* v, void* y, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_out_uint32_t(const void* v, void* y, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil
    void pk_il_out_uint64_t(const void* v, void* y, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb) noexcept nogil

cdef extern from "pooling_narrow.h":
    enum:
        PK_NARROW_WIDTH     # the widest rows in and out (strategy NARROW: three vectors of float32)
        PK_NARROW_MAX_K     # and the most W taps
        PK_NARROW_L         # float32 lanes of a vector
        PK_NARROW_H16_WIDTH     # the same for 16-bit floats' int16 keys (and int16 and uint16)
        PK_NARROW_H16_L
        PK_NARROW_I32_WIDTH     # and for int32 and uint32
        PK_NARROW_I32_L
    Py_ssize_t pk_narrow_margin_f32(Py_ssize_t kw, Py_ssize_t dw) noexcept nogil
    Py_ssize_t pk_narrow_margin_h16(Py_ssize_t kw, Py_ssize_t dw) noexcept nogil
    Py_ssize_t pk_narrow_tail_f32(const float* x, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                                  Py_ssize_t OW, int inf_bits) noexcept nogil
    Py_ssize_t pk_narrow_f32(const float* x, float* y, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                             Py_ssize_t OH, Py_ssize_t OW, Py_ssize_t kh, const Py_ssize_t* rows,
                             Py_ssize_t sh, Py_ssize_t dh, Py_ssize_t ph, Py_ssize_t kw, Py_ssize_t dw,
                             Py_ssize_t pw, float* hb, float* kb, int inf_bits) noexcept nogil
    Py_ssize_t pk_narrow_h16(const int16_t* x, int16_t* y, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                             Py_ssize_t OH, Py_ssize_t OW, Py_ssize_t kh, const Py_ssize_t* rows,
                             Py_ssize_t sh, Py_ssize_t dh, Py_ssize_t ph, Py_ssize_t kw, Py_ssize_t dw,
                             Py_ssize_t pw, int16_t* hb, int16_t* kb, int inf_bits) noexcept nogil
    Py_ssize_t pk_narrow_margin_i16(Py_ssize_t kw, Py_ssize_t dw) noexcept nogil
    Py_ssize_t pk_narrow_margin_i32(Py_ssize_t kw, Py_ssize_t dw) noexcept nogil
    Py_ssize_t pk_narrow_i16(const int16_t* x, int16_t* y, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                             Py_ssize_t OH, Py_ssize_t OW, Py_ssize_t kh, const Py_ssize_t* rows,
                             Py_ssize_t sh, Py_ssize_t dh, Py_ssize_t ph, Py_ssize_t kw, Py_ssize_t dw,
                             Py_ssize_t pw, int16_t* hb, int16_t* kb, int inf_bits) noexcept nogil
    Py_ssize_t pk_narrow_i32(const int32_t* x, int32_t* y, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                             Py_ssize_t OH, Py_ssize_t OW, Py_ssize_t kh, const Py_ssize_t* rows,
                             Py_ssize_t sh, Py_ssize_t dh, Py_ssize_t ph, Py_ssize_t kw, Py_ssize_t dw,
                             Py_ssize_t pw, int32_t* hb, int32_t* kb, int inf_bits) noexcept nogil

cdef extern from "pooling_nhwc.h":
    int pk_nhwc_row_f32(const float** rows, const unsigned char* chk, Py_ssize_t nrows, float* y,
                        Py_ssize_t OW, Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw,
                        Py_ssize_t own, const Py_ssize_t* tw, const float* next,
                        Py_ssize_t nlen) noexcept nogil
    int pk_nhwc_row_h16(const int16_t** rows, const unsigned char* chk, Py_ssize_t nrows, int16_t* y,
                        Py_ssize_t OW, Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw,
                        Py_ssize_t own, const Py_ssize_t* tw, const int16_t* next,
                        Py_ssize_t nlen, int inf_bits) noexcept nogil
    int pk_nhwc_row_i16(const int16_t** rows, const unsigned char* chk, Py_ssize_t nrows, int16_t* y,
                        Py_ssize_t OW, Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw,
                        Py_ssize_t own, const Py_ssize_t* tw, const int16_t* next,
                        Py_ssize_t nlen, int inf_bits) noexcept nogil
    int pk_nhwc_row_i32(const int32_t** rows, const unsigned char* chk, Py_ssize_t nrows, int32_t* y,
                        Py_ssize_t OW, Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw,
                        Py_ssize_t own, const Py_ssize_t* tw, const int32_t* next,
                        Py_ssize_t nlen, int inf_bits) noexcept nogil
    int pk_nhwc_irow_f32(const float** rows, const int32_t* rpix, const unsigned char* chk, Py_ssize_t nrows,
                         float* y, int64_t* ind, int64_t base, int64_t imul, int64_t icmul, Py_ssize_t OW,
                         Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw, Py_ssize_t own,
                         const Py_ssize_t* tw, const float* next, Py_ssize_t nlen, int inf_bits) noexcept nogil
    int pk_nhwc_irow_i32(const int32_t** rows, const int32_t* rpix, const unsigned char* chk, Py_ssize_t nrows,
                         int32_t* y, int64_t* ind, int64_t base, int64_t imul, int64_t icmul, Py_ssize_t OW,
                         Py_ssize_t C, Py_ssize_t sw, Py_ssize_t dw, Py_ssize_t pw, Py_ssize_t own,
                         const Py_ssize_t* tw, const int32_t* next, Py_ssize_t nlen, int inf_bits) noexcept nogil
    enum:
        PK_NHWC_H16_L   # 16-bit floats' lanes of NHWC_BLOCKS' vectors: channels at least this many
        PK_NHWC_I32_L   # the same for 4-byte integers (2-byte ones: PK_NHWC_H16_L)
        PK_NHWC_BLOCK   # vectors of channels per block held in registers

cdef extern from "pooling_unpool.h":
    int PK_UNPOOL_WINDOWS
    int pk_unpool_pairs_u32(const uint32_t* x, const int64_t* idx, Py_ssize_t n, uint32_t* top,
                            uint32_t* bottom, int64_t base, int64_t W, int stream) noexcept nogil
    void pk_unpool_fence() noexcept nogil

cdef extern from "pooling_zero.h":
    void pk_zero(void* p, size_t nbytes) noexcept nogil

cdef extern from "pooling_grad.h":
    enum: PK_GRAD_WINDOWS_MAX
    enum: PK_GRAD_COVER_F32
    void pk_grad_row_f32(float* y, const float* g, const int64_t* idx, const Py_ssize_t* rowoff, int rows,
                         const Py_ssize_t* cw, const unsigned char* cn, int ncol, Py_ssize_t W, int64_t pix,
                         Py_ssize_t C) noexcept nogil
    void pk_grad_row_f64(double* y, const double* g, const int64_t* idx, const Py_ssize_t* rowoff, int rows,
                         const Py_ssize_t* cw, const unsigned char* cn, int ncol, Py_ssize_t W, int64_t pix,
                         Py_ssize_t C) noexcept nogil

cdef extern from "pooling_add.h":
    void pk_add_f32(float* y, const float* x, Py_ssize_t n) noexcept nogil
    void pk_add_f32_pf(float* y, const float* x, Py_ssize_t n) noexcept nogil
    float pk_sum_keep_nan(float a, float b) noexcept nogil
    double pk_sum_keep_nan_f64(double a, double b) noexcept nogil

cdef extern from "pooling_col2im.h":
    enum:
        PK_COL_FLOAT
        PK_COL_DOUBLE
        PK_COL_CFLOAT
        PK_COL_CDOUBLE
        PK_COL_BOOL
        PK_COL_UINT8
        PK_COL_UINT16
        PK_COL_UINT32
        PK_COL_UINT64
        PK_COL_F16
        PK_COL_BF16
        PK_COL_MAX_AXES
        PK_COL_GRID_CHUNK
    void pk_col_add_f16(float* acc, const uint16_t* x, Py_ssize_t n) noexcept nogil
    void pk_col_add_bf16(float* acc, const uint16_t* x, Py_ssize_t n) noexcept nogil
    ctypedef struct pk_col_plan:
        Py_ssize_t n, L, K
        const Py_ssize_t* image
        Py_ssize_t step, nbl
        const Py_ssize_t* const* off
        const Py_ssize_t* const* pre
        const Py_ssize_t* loff
        const Py_ssize_t* last
        Py_ssize_t maxcomb
        int grid
        int tiled
        Py_ssize_t tph, tpw
        Py_ssize_t tkh, tkw
        Py_ssize_t hstep, nbh, lph, hph
        const Py_ssize_t* hoff
        const Py_ssize_t* hlast
        int regs
        const char* xlo
        const char* xhi
    Py_ssize_t pk_col_unit(int kind) noexcept nogil
    int pk_col_regs_fit(int kind, const pk_col_plan* p) noexcept nogil
    void pk_col2im_item(int kind, const pk_col_plan* p, const char* x, char* y, Py_ssize_t o0,
                        Py_ssize_t o1, const char** kx, Py_ssize_t ahead, Py_ssize_t np) noexcept nogil

cdef extern from "pooling_reduce.h":
    float pk_max_f32(const float* x, Py_ssize_t n, int* odd) noexcept nogil
    unsigned pk_max_f32_runs(const float* x, Py_ssize_t n, float* y) noexcept nogil
    double pk_max_f64(const double* x, Py_ssize_t n, int* odd) noexcept nogil
    uint16_t pk_max_h16(const uint16_t* x, Py_ssize_t n, int inf_bits, int* odd) noexcept nogil
    int pk_any_nan_f32(const float* x, Py_ssize_t n) noexcept nogil
    int pk_any_nan_f64(const double* x, Py_ssize_t n) noexcept nogil
    int pk_any_nan_h16(const uint16_t* x, Py_ssize_t n, int inf_bits) noexcept nogil

cdef extern from "pooling_rows.h":
    int pk_tiles_w2_f32(const float* src, float* dst, Py_ssize_t n) noexcept nogil
    int pk_tiles_w2_h16(const int16_t* src, int16_t* dst, Py_ssize_t n, int inf_bits) noexcept nogil
    void pk_tiles_h2_k16(const int16_t* buf, int16_t* y, Py_ssize_t n, Py_ssize_t OW) noexcept nogil
    int pk_tiles_k2_f32(const float* x0, const float* x1, float* y, Py_ssize_t n,
                        Py_ssize_t OW, int inf_bits) noexcept nogil
    int pk_tiles_k2_h16(const int16_t* x0, const int16_t* x1, int16_t* y, Py_ssize_t n,
                        Py_ssize_t OW, int inf_bits) noexcept nogil
    int pk_tiles_k2_h16n(const int16_t* x0, const int16_t* x1, int16_t* y, Py_ssize_t n,
                         Py_ssize_t OW, int inf_bits) noexcept nogil
    # the integers of 2 and 4 bytes (inf_bits nonzero: the unsigned ones, compared as keys)
    int pk_tiles_k2_i16(const int16_t* x0, const int16_t* x1, int16_t* y, Py_ssize_t n,
                        Py_ssize_t OW, int inf_bits) noexcept nogil
    int pk_tiles_k2_i16n(const int16_t* x0, const int16_t* x1, int16_t* y, Py_ssize_t n,
                         Py_ssize_t OW, int inf_bits) noexcept nogil
    int pk_tiles_k2_i32(const int32_t* x0, const int32_t* x1, int32_t* y, Py_ssize_t n,
                        Py_ssize_t OW, int inf_bits) noexcept nogil
    enum:
        PK_ROWS_MAX_LANES   # rows at least this long (strategy ROWS_FIRST)
        PK_ROWS_L           # float32 lanes of this build's row vectors (TILES' one-pass 2x2 windows)
        PK_RH_L             # int16 lanes of the same (16-bit floats' keys)
        PK_RN_L             # int16 lanes of the 16-byte vectors of narrower rows (PK_RH_L in 16-byte builds)
        PK_ROWS_H16_MAX_LANES   # the spare values of a 16-bit row buffer
        PK_ROWS_H16_MIN_LANES   # 16-bit rows at least this long
    Py_ssize_t pk_rows_len(Py_ssize_t W, Py_ssize_t OW, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                           Py_ssize_t pw, Py_ssize_t lanes) noexcept nogil
    void pk_rows_pad(float* V, Py_ssize_t ld, Py_ssize_t R, Py_ssize_t W, Py_ssize_t pw) noexcept nogil
    void pk_rows_pad_h16(int16_t* V, Py_ssize_t ld, Py_ssize_t R, Py_ssize_t W, Py_ssize_t pw) noexcept nogil
    int pk_rows_f32(const float* x, float* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                    const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                    Py_ssize_t pw, float* V, Py_ssize_t ld, Py_ssize_t R, const float* next,
                    int inf_bits) noexcept nogil
    int pk_rows_h16(const int16_t* x, int16_t* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                    const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                    Py_ssize_t pw, int16_t* V, Py_ssize_t ld, Py_ssize_t R, const int16_t* next,
                    int inf_bits) noexcept nogil
    int pk_rows_h16n(const int16_t* x, int16_t* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                     const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                     Py_ssize_t pw, int16_t* V, Py_ssize_t ld, Py_ssize_t R, const int16_t* next,
                     int inf_bits) noexcept nogil
    void pk_rows_pad_i32(int32_t* V, Py_ssize_t ld, Py_ssize_t R, Py_ssize_t W, Py_ssize_t pw) noexcept nogil
    int pk_rows_i16(const int16_t* x, int16_t* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                    const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                    Py_ssize_t pw, int16_t* V, Py_ssize_t ld, Py_ssize_t R, const int16_t* next,
                    int inf_bits) noexcept nogil
    int pk_rows_i16n(const int16_t* x, int16_t* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                     const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                     Py_ssize_t pw, int16_t* V, Py_ssize_t ld, Py_ssize_t R, const int16_t* next,
                     int inf_bits) noexcept nogil
    int pk_rows_i32(const int32_t* x, int32_t* y, Py_ssize_t H, Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW,
                    const Py_ssize_t* rows, Py_ssize_t kh, int nchk, Py_ssize_t kw, Py_ssize_t sw, Py_ssize_t dw,
                    Py_ssize_t pw, int32_t* V, Py_ssize_t ld, Py_ssize_t R, const int32_t* next,
                    int inf_bits) noexcept nogil

cdef extern from "pooling_pool_api.h":
    ctypedef void (*pk_body)(void* ctx, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil
    void pk_parallel(pk_body body, void* ctx, Py_ssize_t items, Py_ssize_t chunk,
                     int n_threads) noexcept nogil
    void pk_atomic_or(int* flag, int value) noexcept nogil
    void pk_stats(int64_t* beside_owner, int64_t* moved) noexcept nogil
    int pk_bind(const void* api) noexcept
    int PK_POOL

cdef extern from "pooling_config.h":
    const char* PK_COMPILER
    const char* PK_SIMD_BASELINE

cdef extern from "pooling_simd.h":
    int PK_SIMD          # 1: the hand-written loops are vector code; 0: one value at a time
    int PK_SIMD_BYTES    # the build's widest vector registers


# The process's one thread pool is pooling._runtime's (pooling_pool_api.h): bound at import,
# before any kernel can run.
from pooling._runtime import pool_api as _pool_api
if pk_bind(PyCapsule_GetPointer(_pool_api, "pooling._runtime.pool_api")) != 0:
    raise ImportError("pooling: pooling._runtime was built from other sources than these kernels; "
                      "rebuild the package")


# ===========================================================================
# Element types of MaxPool.  float16 and bfloat16 both arrive as uint16 bit
# patterns; the Python layer passes the +inf pattern of the format
# (``inf_bits``), which is all that comparing them needs (pooling_half.h).
# ===========================================================================

ctypedef fused pool_t:
    float
    double
    int8_t
    uint8_t
    uint16_t
    int16_t
    int32_t
    int64_t


# The kinds the register loops of ROWS_FIRST, NHWC_BLOCKS and NARROW take: float32, 16-bit floats'
# bits, and the integers of 2 and 4 bytes (the unsigned ones as their signed type).
ctypedef fused reg_t:
    float
    uint16_t
    int16_t
    int32_t


# The kinds of pool_t, in the order of _KINDS: the C type names the Python
# layer passes (pooling._dtypes.C_TYPES) and max_pool_axis[ctype] accepts.
cdef enum:
    KIND_FLOAT = 0
    KIND_DOUBLE = 1
    KIND_INT8 = 2
    KIND_UINT8 = 3
    KIND_UINT16 = 4
    KIND_INT16 = 5
    KIND_INT32 = 6
    KIND_INT64 = 7

_KINDS = ("float", "double", "int8_t", "uint8_t", "uint16_t", "int16_t", "int32_t", "int64_t")
_ITEMSIZES = (4, 8, 1, 1, 2, 2, 4, 8)


cdef inline int _kind_of(pool_t* tag) noexcept nogil:
    """The kind of pool_t (`tag` only selects the type)."""
    if pool_t is float:
        return KIND_FLOAT
    elif pool_t is double:
        return KIND_DOUBLE
    elif pool_t is int8_t:
        return KIND_INT8
    elif pool_t is uint8_t:
        return KIND_UINT8
    elif pool_t is uint16_t:
        return KIND_UINT16
    elif pool_t is int16_t:
        return KIND_INT16
    elif pool_t is int32_t:
        return KIND_INT32
    else:
        return KIND_INT64


# ===========================================================================
# Compares and window helpers every MaxPool strategy inlines.
#
# The integers of 2, 4 and 8 bytes run in the signed types, which hold the
# unsigned ones too: for those the launch's inf_bits is nonzero, and a value
# compares by its key, its bits with the sign bit flipped (_ukey), whose
# signed order is the unsigned order.  One specialisation a width, not two.
# ===========================================================================

cdef inline pool_t _ukey(pool_t v, uint16_t inf_bits) noexcept nogil:
    """The key of a 2-, 4- or 8-byte integer (see above): v itself for the signed type
    (inf_bits 0), v with its sign bit flipped for the unsigned one; an involution."""
    if pool_t is int16_t:
        return <int16_t>(<uint16_t>v ^ (<uint16_t>0x8000 if inf_bits else <uint16_t>0))
    elif pool_t is int32_t:
        return <int32_t>(<uint32_t>v ^ ((<uint32_t>1) << 31 if inf_bits else <uint32_t>0))
    elif pool_t is int64_t:
        return <int64_t>(<uint64_t>v ^ ((<uint64_t>1) << 63 if inf_bits else <uint64_t>0))
    else:
        return v


cdef inline bint _gt(pool_t v, pool_t m, uint16_t inf_bits) noexcept nogil:
    """True when v must replace the running maximum m (behaviour.md §2.4).

    Strictly greater, so the first maximum wins ties (-0.0 ties +0.0).  NaN is
    above every number and a NaN already held is never replaced.
    """
    if pool_t is float or pool_t is double:
        return (not (v <= m)) & (m == m)
    elif pool_t is uint16_t:
        return pk_half_key(v, inf_bits) > pk_half_key(m, inf_bits)
    elif pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:
        return _ukey(v, inf_bits) > _ukey(m, inf_bits)
    else:
        return v > m


cdef inline bint _isnan(pool_t v, uint16_t inf_bits) noexcept nogil:
    if pool_t is float or pool_t is double:
        return v != v
    elif pool_t is uint16_t:
        return pk_half_isnan(v, inf_bits)
    else:
        return False


cdef inline pool_t _empty_value(pool_t like, uint16_t inf_bits) noexcept nogil:
    """Y of a window with no valid tap: -inf, or the integer type's minimum."""
    if pool_t is float or pool_t is double:
        return -INFINITY
    elif pool_t is uint16_t:
        return 0x8000 | inf_bits
    elif pool_t is int8_t:
        return -128
    elif pool_t is int16_t:
        return _ukey(<int16_t>INT16_MIN, inf_bits)  # the lowest key: 0 for the unsigned type
    elif pool_t is int32_t:
        return _ukey(<int32_t>INT32_MIN, inf_bits)
    elif pool_t is int64_t:
        return _ukey(<int64_t>INT64_MIN, inf_bits)
    else:
        return 0


cdef inline pool_t _clamp(pool_t y, pool_t lo, pool_t hi, int mode, uint16_t inf_bits) noexcept nogil:
    """Fused activation, min(max(y, lo), hi): mode bit 1 applies lo, bit 2 hi; NaN stays NaN.
    Integers as selects on their keys, a bound that is off the key's end, so that the loops over
    an output row vectorise (bool's clamp at 1 runs on every result)."""
    cdef pool_t k, klo, khi
    if pool_t is int8_t or pool_t is uint8_t:
        klo = lo if mode & 1 else (-128 if pool_t is int8_t else 0)
        khi = hi if mode & 2 else (127 if pool_t is int8_t else 255)
        return min(max(y, klo), khi)
    elif pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:
        klo = _ukey(lo, inf_bits) if mode & 1 else _ukey(_empty_value(<pool_t>0, inf_bits), inf_bits)
        khi = _ukey(hi, inf_bits) if mode & 2 else ~_ukey(_empty_value(<pool_t>0, inf_bits), inf_bits)
        k = min(max(_ukey(y, inf_bits), klo), khi)
        return _ukey(k, inf_bits)
    if _isnan(y, inf_bits):
        return y
    if (mode & 1) and _gt(lo, y, inf_bits):
        y = lo
    if (mode & 2) and _gt(y, hi, inf_bits):
        y = hi
    return y


cdef inline void _clamp_row(pool_t* y, Py_ssize_t n, pool_t lo, pool_t hi, int mode,
                            uint16_t inf_bits) noexcept nogil:
    """_clamp over n values, its arguments in locals: a byte store may alias a job or geometry they
    were read from, which would be read again on every value."""
    cdef Py_ssize_t i
    for i in range(n):
        y[i] = _clamp(y[i], lo, hi, mode, inf_bits)


cdef inline void _taps(Py_ssize_t base, Py_ssize_t dil, Py_ssize_t k, Py_ssize_t size,
                       Py_ssize_t* t0, Py_ssize_t* t1) noexcept nogil:
    """The taps t in [t0, t1) of a window starting at `base` with base + t*dil in [0, size).

    Validity is an interval of t because positions grow with t; t0 >= t1 means
    the window is empty (it lies wholly in the padding or between dilated taps).
    """
    t0[0] = 0 if base >= 0 else (-base + dil - 1) // dil
    if base >= size:
        t1[0] = 0
    else:
        t1[0] = min(k, (size - 1 - base) // dil + 1)



cdef inline bint _keep(pool_t v, pool_t m, uint16_t inf_bits, bint exact) noexcept nogil:
    """v replaces m.  exact: the contract's rule (_gt).  Otherwise a cheaper compare that
    agrees with it when neither is _odd(): for float and double plain v > m
    (maxps: wrong only when a new NaN arrives), for 16-bit floats the fast key
    (wrong only for NaN and -0.0)."""
    if (pool_t is float or pool_t is double) and not exact:
        return v > m
    if pool_t is uint16_t and not exact:
        return pk_half_fast_key(v) > pk_half_fast_key(m)
    return _gt(v, m, inf_bits)


cdef inline bint _odd(pool_t v, uint16_t inf_bits) noexcept nogil:
    """Whether v is what the cheap compare of _keep gets wrong: a NaN (float,
    double), a NaN or -0.0 (16-bit floats).  Integers never are."""
    if pool_t is uint16_t:
        return _isnan(v, inf_bits) | (v == 0x8000)
    return _isnan(v, inf_bits)


cdef inline bint _odd2(pool_t a, pool_t b, uint16_t inf_bits) noexcept nogil:
    """_odd(a) or _odd(b); for float and double one unordered compare."""
    if pool_t is float or pool_t is double:
        return PK_UNORDERED(a, b)
    else:
        return _odd(a, inf_bits) | _odd(b, inf_bits)


cdef inline bint _special(const pool_t* xr, Py_ssize_t n, uint16_t inf_bits) noexcept nogil:
    """Whether n values hold an _odd() one (one unordered compare tests two
    float or double values)."""
    cdef Py_ssize_t i, half = n // 2
    cdef bint special = False
    cdef uint16_t top = 0, low = 0xffff
    if pool_t is float or pool_t is double:
        for i in range(half):
            special |= PK_UNORDERED(xr[i], xr[i + half])
        if n % 2:
            special |= xr[n - 1] != xr[n - 1]
    elif pool_t is uint16_t:
        # The largest magnitude (above +inf's: a NaN), and the smallest value with
        # the sign bit flipped (0 only for -0.0): two 16-bit reductions (a flag per
        # value widened the lanes to 32 bits: docs/tuning.md#fused-kernel-loops).
        for i in range(n):
            top = max(top, <uint16_t>(xr[i] & 0x7fff))
            low = min(low, <uint16_t>(xr[i] ^ 0x8000))
        special = (top > inf_bits) | (low == 0)
    return special

