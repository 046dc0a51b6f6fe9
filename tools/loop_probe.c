/* The hot loops of include/, each wrapped out of line, to read their object code per ISA and compiler
 * (tools/loop_census.py; docs/design.md, "On aarch64").  Not part of the build. */
#include <string.h>
#include <stdint.h>
#include "pooling_rows.h"
#include "pooling_narrow.h"
#include "pooling_reduce.h"
#include "pooling_nhwc.h"
#include "pooling_add.h"
#include "pooling_col2im.h"
#include "pooling_zero.h"
__attribute__((noinline)) int w_rows(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
    ptrdiff_t OW, const ptrdiff_t* rows, ptrdiff_t kh, int nchk, ptrdiff_t kw, ptrdiff_t sw, ptrdiff_t dw,
    ptrdiff_t pw, float* V, ptrdiff_t ld, ptrdiff_t R, const float* next)
{ return pk_rows_f32(x, y, H, W, OH, OW, rows, kh, nchk, kw, sw, dw, pw, V, ld, R, next); }
__attribute__((noinline)) int w_tiles(const float* a, const float* b, float* y, ptrdiff_t n, ptrdiff_t OW)
{ return pk_tiles_k2_f32(a, b, y, n, OW); }
__attribute__((noinline)) ptrdiff_t w_narrow(const float* x, float* y, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
    ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t kh, const ptrdiff_t* rows, ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph,
    ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw, float* hb)
{ return pk_narrow_f32(x, y, n, H, W, OH, OW, kh, rows, sh, dh, ph, kw, dw, pw, hb); }
__attribute__((noinline)) int w_nhwc(const float* const* rows, const unsigned char* chk, ptrdiff_t nrows,
    float* y, ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw, ptrdiff_t own,
    const ptrdiff_t* tw, const float* next, ptrdiff_t nlen)
{ return pk_nhwc_row_f32(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, next, nlen); }
__attribute__((noinline)) void w_add(float* y, const float* x, ptrdiff_t n) { pk_add_f32(y, x, n); }
__attribute__((noinline)) void w_gather(float* y, const void* const* src, const ptrdiff_t* lo, const ptrdiff_t* hi,
    int m, ptrdiff_t ahead)
{ pk_col_gather_f32(y, src, lo, hi, m, ahead); }
__attribute__((noinline)) void w_zero(void* p, size_t n) { pk_zero(p, n); }
__attribute__((noinline)) float w_max32(const float* x, ptrdiff_t n, int* odd) { return pk_max_f32(x, n, odd); }
__attribute__((noinline)) double w_max64(const double* x, ptrdiff_t n, int* odd) { return pk_max_f64(x, n, odd); }
