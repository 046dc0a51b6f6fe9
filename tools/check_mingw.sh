#!/usr/bin/env bash
# The thread pool's Windows layer, checked on Linux: tools/pool_harness.c (the pool alone, outside
# Python, plus every header of include/ that compiles without Python) built and run.
#
#   1. natively with gcc: the pool on POSIX threads, and with -DPK_POOL_OPENMP -fopenmp the OpenMP
#      loop that MSVC builds instead; both run here;
#   2. with mingw-w64 (x86_64-w64-mingw32-gcc) for Win32: as is and with -DPK_SIMD_SCALAR (the loops
#      MSVC compiles), each without and, where mingw has libgomp, with -fopenmp (linked statically);
#      also -DPK_POOL_OPENMP -fopenmp, MSVC's path under the Windows headers;
#   3. with clang --target=x86_64-w64-mingw32 (where clang is installed): the pool and the headers'
#      vector code for Win32, baseline and AVX2 (the Windows wheels' compiler is clang-cl);
#   4. under wine (wine64 or wine, where installed): the Win32 pool from mingw-w64 gcc and from clang
#      (threads start, sleep and wake, run-once, affinity); without wine, "not run".  The builds
#      linked with mingw's libgomp are compiled only: one ran, passed, and then hung at exit under
#      wine in CI (the OpenMP loop runs natively in step 1).
#
# Every build is -O2 -Wall -Werror (-Wno-unused-function: the headers' static functions go unused
# in the harness).  A run passes when every item of thousands of calls (1, 2, 4 and 8 threads, back
# to back and after sleeps past the workers' spin, from two calling threads) ran exactly once.
#
# Usage: bash tools/check_mingw.sh   (Linux; CHECK_MINGW_KEEP=1 keeps the temporary folder).  As
#        root, installs gcc-mingw-w64-x86-64 if missing (wine is left to the caller: apt-get install
#        wine64).  Exit status: 0 passed, 77 skipped (no mingw-w64 and none could be installed, or
#        tools/pool_harness.c is not here), 1 failed.
set -Eeuo pipefail
trap 'echo "check_mingw: FAILED (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MINGW=x86_64-w64-mingw32-gcc
FLAGS=(-O2 -Wall -Werror -Wno-unused-function -I"$ROOT/include")
HARNESS=$ROOT/tools/pool_harness.c
started=$SECONDS

step() { printf '\n== check_mingw [%3ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { printf '\ncheck_mingw: FAILED: %s\n' "$*" >&2; exit 1; }
skip() { printf '\ncheck_mingw: SKIPPED: %s\n' "$*" >&2; exit 77; }

[[ -f "$HARNESS" ]] || skip "tools/pool_harness.c is not here"
if ! command -v "$MINGW" >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "check_mingw: installing gcc-mingw-w64-x86-64"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 gcc-mingw-w64-x86-64 >/dev/null 2>&1 || true
    fi
    command -v "$MINGW" >/dev/null 2>&1 || skip "no $MINGW (apt-get install gcc-mingw-w64-x86-64)"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_mingw.XXXXXX")
WINE=$(command -v wine64 || command -v wine || true)
export WINEPREFIX=$TMP/wine WINEDEBUG=-all
cleanup() {
    if [[ -n "$WINE" && -d "$WINEPREFIX" ]] && command -v wineserver >/dev/null 2>&1; then
        wineserver -k >/dev/null 2>&1 || true  # this prefix's server only
    fi
    if [[ "${CHECK_MINGW_KEEP:-0}" == 1 ]]; then echo "check_mingw: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

build() {  # build OUT COMPILER FLAGS...: the harness, or fail with the compiler's messages
    local out=$1 cc=$2
    shift 2
    echo "$cc $* -> $out"
    "$cc" "${FLAGS[@]}" "$HARNESS" "$@" -o "$TMP/$out" || fail "$cc $* does not build the harness"
}
run() {  # run OUT [LAUNCHER]: run a build (under LAUNCHER, e.g. wine), 600 s at most
    local out=$1
    shift
    timeout 600 "$@" "$TMP/$out" || fail "$out${1:+ under $1} (status $?)"
}

step "native gcc: the pool on POSIX threads"
build pool gcc -lpthread
run pool
step "native gcc: the OpenMP loop (-DPK_POOL_OPENMP -fopenmp)"
build pool_openmp gcc -DPK_POOL_OPENMP -fopenmp
run pool_openmp

step "mingw-w64: the pool on Win32"
build pool.exe "$MINGW"
build pool_scalar.exe "$MINGW" -DPK_SIMD_SCALAR
gomp=$("$MINGW" -print-file-name=libgomp.a)
if [[ "$gomp" == /* && -f "$gomp" ]]; then
    build pool_fopenmp.exe "$MINGW" -fopenmp -static
    build pool_scalar_fopenmp.exe "$MINGW" -DPK_SIMD_SCALAR -fopenmp -static
    build pool_openmp.exe "$MINGW" -DPK_POOL_OPENMP -fopenmp -static
    runs=(pool.exe)  # (the libgomp builds are compiled only: mingw's libgomp under wine once hung at exit)
else
    echo "not built with -fopenmp: mingw-w64 has no libgomp"
    runs=(pool.exe)
fi

# clang for Windows (the compiler of the Windows wheels, there as clang-cl with MSVC's ABI): here
# with mingw-w64's headers and libraries, the vector extensions on, baseline and AVX2.
CLANG=$(command -v clang || true)
if [[ -n "$CLANG" ]]; then
    step "clang --target=x86_64-w64-mingw32: the pool and the vector headers on Win32"
    libgcc=$(dirname "$("$MINGW" -print-libgcc-file-name)")
    build pool_clang.exe "$CLANG" --target=x86_64-w64-mingw32 -L"$libgcc"
    build pool_clang_avx2.exe "$CLANG" --target=x86_64-w64-mingw32 -mavx2 -mfma -mf16c -L"$libgcc"
    runs+=(pool_clang.exe)
    grep -q ' avx2 ' /proc/cpuinfo 2>/dev/null && runs+=(pool_clang_avx2.exe)
else
    echo "clang for Windows not built: no clang"
fi

step "wine: the Win32 builds"
if [[ -z "$WINE" ]]; then
    echo "not run: no wine"
else
    "$WINE" wineboot --init >/dev/null 2>&1 || true  # a fresh prefix, made before the runs and quietly
    for exe in "${runs[@]}"; do
        echo "$exe:"
        run "$exe" "$WINE"
    done
fi

step "passed"
