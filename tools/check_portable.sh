#!/usr/bin/env bash
# The portable path, as MSVC builds it for Windows wheels, checked on this machine: the kernels
# built with the hand-written vector loops switched off (PK_SIMD_SCALAR: one value at a time, as a
# compiler without GCC vector extensions compiles them) and the thread pool's OpenMP-loop fallback
# forced (PK_POOL_OPENMP: what pooling_pool.h compiles under MSVC), then the kernel tests
# (tests/suites.py's KERNEL_TESTS and test_simd.py, which runs them under every SIMD build).
#
#   1. a copy of the working tree's tracked files, built in place with
#      CFLAGS="-DPK_SIMD_SCALAR -DPK_POOL_OPENMP" (the baseline and AVX2 builds: MSVC gets no AVX-512 one);
#   2. `show_config()` must say so (no vector code; the OpenMP loop as the thread runtime);
#   3. the kernel tests against that build.
#
# gcc -O3 still auto-vectorises the scalar loops; MSVC's vectoriser does less, so Windows may be
# slower than this build (docs/development.md, "Windows' path").  Usage: bash tools/check_portable.sh
# [pytest args]; PYTHON (default python) needs the build requirements and the test extras;
# CHECK_PORTABLE_KEEP=1 keeps the build (its src/ is what `bench/compare.py --against` takes).
# Exit status: 0 passed, 1 failed.
set -Eeuo pipefail
trap 'echo "check_portable: FAILED (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python}
started=$SECONDS
step() { printf '\n== check_portable [%4ds] %s\n' $((SECONDS - started)) "$*"; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_portable.XXXXXX")
if [[ "${CHECK_PORTABLE_KEEP:-0}" == 1 ]]; then
    trap 'echo "check_portable: kept $TMP/tree"' EXIT
else
    trap 'rm -rf "$TMP"' EXIT
fi

step "a copy of the tracked files"
mkdir -p "$TMP/tree"
git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 cp --parents -t "$TMP/tree")

# MSVC gets no AVX-512 build (setup.py's _avx512_flags): neither does this copy.
"$PYTHON" - "$TMP/tree/setup.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = '"pooling._core_avx512": _avx512_flags(compiler) if avx2 else None'
if old not in text:
    sys.exit("check_portable: setup.py no longer chooses the AVX-512 build as this script expects")
open(path, "w").write(text.replace(old, '"pooling._core_avx512": None'))
PY

step "build with PK_SIMD_SCALAR and PK_POOL_OPENMP (baseline and AVX2, as MSVC builds them)"
(cd "$TMP/tree" && CFLAGS="${CFLAGS:-} -DPK_SIMD_SCALAR -DPK_POOL_OPENMP" \
    "$PYTHON" setup.py build_ext --inplace >"$TMP/build.log" 2>&1) ||
    { tail -n 40 "$TMP/build.log" >&2; exit 1; }

step "show_config"
export PYTHONPATH="$TMP/tree/src"
config=$(cd "$TMP" && "$PYTHON" -c 'import pooling; pooling.show_config()')
echo "$config" | grep -E '^(compiler|openmp|thread runtime|simd|vector code|c flags)'
echo "$config" | grep -q '^vector code *none' || { echo "check_portable: the build has vector code" >&2; exit 1; }
echo "$config" | grep -q '^thread runtime *OpenMP' ||
    { echo "check_portable: the thread runtime is not the OpenMP loop" >&2; exit 1; }

step "the kernel tests, under every SIMD build"
tests=$("$PYTHON" "$TMP/tree/tests/suites.py" KERNEL_TESTS)
(cd "$TMP/tree" && "$PYTHON" -m pytest $tests -q -p no:cacheprovider "$@")
step "done"
