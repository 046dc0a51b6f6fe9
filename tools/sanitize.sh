#!/usr/bin/env bash
# Sanitizer run: build the kernels (pooling._core and, where gcc targets them, pooling._core_avx2 and
# pooling._core_avx512; and pooling._runtime) with
# AddressSanitizer + UndefinedBehaviorSanitizer and Cython's
# bounds/wraparound/initialized checks (POOLING_DEBUG=1), in a scratch copy of this tree (the
# checkout's own build is left alone), then run under it:
#   1. the test suite, less the tests that run no compiled code of their own (tests/suites.py's
#      SANITIZED_TESTS; -q -p no:randomly; no -x, so that one finding does not hide the next),
#   2. the fuzz tests again, SANITIZE_FUZZ_FACTOR (default 5) times as many examples, fresh ones,
#   3. the main job, python -m pooling,
#   4. tools/pool_stress.c, the thread pool alone, under ThreadSanitizer (where gcc has libtsan) and
#      plainly built with a fork.
# Exits non-zero on any failure and on any sanitizer report.  Every check aborts the process that hits
# it; pytest runs with --capture=sys so the report reaches the output (fd 2 is not captured), ASan
# also writes its reports to files (gcc's UBSan ignores log_path when combined with ASan), and the
# output is scanned for reports, including those a test's subprocess printed.
#
#   tools/sanitize.sh                 # everything
#   tools/sanitize.sh -k maxunpool    # extra arguments go to the test-suite pytest run
#   tools/sanitize.sh --check         # exit 0 if the toolchain allows a run here, 77 if not
#
# Needs gcc with libasan and libubsan, and, importable by $PYTHON (default python3): numpy,
# Cython >= 3.1, setuptools, pytest, hypothesis.  SANITIZE_KEEP=1 keeps the scratch directory.
# SANITIZE_JOBS (default: the CPUs here) processes share the suite.  Measured on 2 cores (Xeon 0xCF
# VM, 2026-12-01): 10 minutes to build at -O3, about 5 at -O1; the suite 11 in two processes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
FUZZ_FACTOR=${SANITIZE_FUZZ_FACTOR:-5}

toolchain() {
    command -v gcc >/dev/null 2>&1 || { echo "sanitize.sh: gcc not found"; return 1; }
    libasan=$(gcc -print-file-name=libasan.so)
    libubsan=$(gcc -print-file-name=libubsan.so)
    # Without the library gcc prints the bare name back.
    [ -e "$libasan" ] && [ "$libasan" != libasan.so ] || { echo "sanitize.sh: gcc has no libasan"; return 1; }
    [ -e "$libubsan" ] && [ "$libubsan" != libubsan.so ] || { echo "sanitize.sh: gcc has no libubsan"; return 1; }
    # And it must link a sanitized program (some distributions ship the .so without its runtime).
    local probe
    probe=$(mktemp -d "${TMPDIR:-/tmp}/pooling-sanitize-probe.XXXXXX")
    echo 'int main(void) { return 0; }' > "$probe/p.c"
    if ! gcc -fsanitize=address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1 || ! "$probe/p"; then
        rm -rf "$probe"
        echo "sanitize.sh: gcc cannot build a sanitized program"
        return 1
    fi
    # OpenMP too, if this gcc has it: then the sanitized build must use it (the threaded paths are
    # the ones to check).
    printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n' > "$probe/o.c"
    openmp=0
    if gcc -fsanitize=address,undefined -fopenmp "$probe/o.c" -o "$probe/o" >/dev/null 2>&1; then
        openmp=1
    fi
    rm -rf "$probe"
}

if [ "${1:-}" = "--check" ]; then
    toolchain && exit 0 || exit 77
fi
toolchain >&2 || exit 77
missing=$("$PY" - <<'PY'
import importlib.util
print(" ".join(m for m in ("numpy", "Cython", "setuptools", "pytest", "hypothesis")
               if importlib.util.find_spec(m) is None))
PY
)
if [ -n "$missing" ]; then
    echo "sanitize.sh: $PY lacks: $missing (pip install \"cython>=3.1\" setuptools \".[test]\")" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/pooling-sanitize.XXXXXX")
cleanup() {
    if [ "${SANITIZE_KEEP:-0}" = 1 ]; then echo "sanitize.sh: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The sources as they are now (tracked and new files, never build output): git knows which.
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf -) | tar -xf - -C "$work"
else
    (cd "$root" && tar --exclude=./build --exclude=./.venv --exclude='*.so' --exclude='./src/_*.c' -cf - .) \
        | tar -xf - -C "$work"
fi
mkdir -p "$work/sanitizer-logs"
logs="$work/sanitizer-logs"
cd "$work"

start=$SECONDS
echo "== sanitize.sh: building with -fsanitize=address,undefined and POOLING_DEBUG=1 in $work"
# The flags go into CC itself: setup.py's OpenMP probe links a program with CC alone.
# -fno-wrapv: Python's own flags include -fwrapv, which would hide signed overflow from UBSan.
# -O1 (setup.py's -O3 otherwise), as the sanitizers' own documents advise: half the compile time.
# The checks are of the accesses the source makes: the vector code written by hand is the same at
# either level, and a loop that -O3 vectorises reads and writes what its scalar form does.
# -g1: the line tables a report's stack names files and lines from, without the variables' debug
# information (which no report prints): a third less compile time (docs/development.md).
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC="gcc $sanitize" LDSHARED="gcc $sanitize -shared" CFLAGS="-fno-wrapv -g1 -O1" \
POOLING_DEBUG=1 POOLING_REQUIRE_OPENMP=$openmp "$PY" setup.py -q build_ext --inplace > "$logs/build.log" 2>&1 \
    || { cat "$logs/build.log"; echo "sanitize.sh: build failed" >&2; exit 1; }
for so in src/pooling/_core*.so src/pooling/_runtime*.so; do
    ldd "$so" | grep libasan >/dev/null || { echo "sanitize.sh: $so is not linked with libasan" >&2; exit 1; }
done
# Cython raises IndexError from these only where POOLING_DEBUG turned bounds checks on.
grep "__Pyx_RaiseBufferIndexError(" src/_core.c >/dev/null \
    || { echo "sanitize.sh: Cython bounds checks are not in the generated C" >&2; exit 1; }
echo "   built in $((SECONDS - start)) s (OpenMP: $([ $openmp = 1 ] && echo yes || echo no))"

export PYTHONPATH="$work/src" PYTHONMALLOC=malloc PYTHONFAULTHANDLER=1
export LD_PRELOAD="$libasan:$libubsan"
# detect_leaks=0: CPython does not free everything at exit.  allocator_may_return_null=1: an
# allocation too large for the machine stays numpy's MemoryError, as without the sanitizer.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

"$PY" -c "from pooling import _dispatch as d; import sys; sys.exit(not d.core.__file__.startswith('$work'))" \
    || { echo "sanitize.sh: the tests would not import the sanitized build" >&2; exit 1; }

status=0
step() {
    local name=$1; shift
    local t0=$SECONDS
    echo "== sanitize.sh: $name"
    if "$@" 2>&1 | tee -a "$logs/output.log"; then
        echo "   $name: passed in $((SECONDS - t0)) s"
    else
        echo "   $name: FAILED (exit $?) after $((SECONDS - t0)) s"
        status=1
    fi
}
pytest=("$PY" -m pytest -q -p no:randomly -p no:cacheprovider --capture=sys)
# The suite less the tests that run no compiled code of their own (tests/suites.py's
# SANITIZED_TESTS), in SANITIZE_JOBS processes side by side (default: the CPUs here), the test files
# dealt out in turn from the largest: under the sanitizers one process took 17 minutes on 2 cores.
# (Never more processes than files: a pytest given no file runs the whole suite.)  tests/test_simd.py
# (the other builds' kernel tests, in processes of their own) runs beside them without
# PYTHONMALLOC=malloc: what those builds change is their vector code over arrays, whose memory comes
# from malloc either way, while Python's objects meet the same Cython code in every build, which
# the default build's run checks under malloc (a third less CPU for the other builds' runs).
jobs=${SANITIZE_JOBS:-$(nproc 2>/dev/null || echo 1)}
suite() {
    local files=() pids=() names=() i k rc=0 empty=0
    # shellcheck disable=SC2046  # the files' names, one word each
    mapfile -t files < <(ls -S $("$PY" tests/suites.py SANITIZED_TESTS) | grep -vx tests/test_simd.py)
    [ "$jobs" -gt "${#files[@]}" ] && jobs=${#files[@]}
    for ((i = 0; i < jobs; i++)); do
        local shard=()
        for ((k = i; k < ${#files[@]}; k += jobs)); do shard+=("${files[k]}"); done
        "${pytest[@]}" "${shard[@]}" "$@" > "$logs/suite.$i.log" 2>&1 &
        pids+=($!)
        names+=("$i")
    done
    env -u PYTHONMALLOC "${pytest[@]}" tests/test_simd.py "$@" > "$logs/suite.simd.log" 2>&1 &
    pids+=($!)
    names+=(simd)
    for i in "${!pids[@]}"; do
        k=0
        wait "${pids[i]}" || k=$?
        cat "$logs/suite.${names[i]}.log"
        if [ "$k" -eq 5 ]; then  # this process collected nothing (a -k selection): fine if another did
            empty=$((empty + 1))
        elif [ "$k" -ne 0 ]; then
            rc=$k
        fi
    done
    [ "$empty" -eq "${#pids[@]}" ] && rc=5
    return $rc
}
# The type checkers (mypy, pyright: no kernel runs) stay in the README's test command.
step "test suite ($jobs processes, and test_simd.py's)" suite -m "not typecheck" "$@"
if [ "$FUZZ_FACTOR" -gt 0 ]; then
    step "fuzz tests x$FUZZ_FACTOR" env POOLING_FUZZ_EXAMPLES="$FUZZ_FACTOR" "${pytest[@]}" -x tests/test_fuzz.py
fi
step "python -m pooling" "$PY" -m pooling

# The thread pool alone (include/pooling_pool.h, tools/pool_stress.c): under ThreadSanitizer where
# gcc has it, and built plainly for the part that forks.
pyinclude=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
stress() {  # stress NAME FLAGS...: build tools/pool_stress.c with FLAGS and run it without the preloads
    local out=$work/$1; shift
    gcc "$@" -g -I"$root/include" -I"$pyinclude" "$root/tools/pool_stress.c" -o "$out" -lpthread \
        && env -u LD_PRELOAD "$out"
}
libtsan=$(gcc -print-file-name=libtsan.so)
if [ ! -f "$root/tools/pool_stress.c" ]; then
    # (The sdist leaves out C sources other than the headers, so that no generated C travels.)
    echo "== sanitize.sh: tools/pool_stress.c is not here (an sdist): the thread pool's runs are skipped"
elif [ -e "$libtsan" ] && [ "$libtsan" != libtsan.so ]; then
    step "thread pool under ThreadSanitizer" stress pool_stress_tsan -O1 -fsanitize=thread
    step "thread pool with fork" stress pool_stress -O2
else
    echo "== sanitize.sh: no libtsan: the thread pool's ThreadSanitizer run is skipped"
    step "thread pool with fork" stress pool_stress -O2
fi

reports=$(find "$logs" -name 'asan.*' | sort)
if [ -n "$reports" ]; then
    for r in $reports; do echo "== sanitizer report $r"; cat "$r"; done
    status=1
fi
if grep -E "runtime error:|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|SUMMARY: (Address|UndefinedBehavior|Thread)Sanitizer" \
        "$logs/output.log" >/dev/null; then
    echo "== sanitizer reports in the output:"
    grep -E -A3 "runtime error:|ERROR: AddressSanitizer" "$logs/output.log" | head -40
    status=1
fi
echo "== sanitize.sh: $([ $status = 0 ] && echo clean || echo FAILED), $((SECONDS - start)) s in all"
exit $status
