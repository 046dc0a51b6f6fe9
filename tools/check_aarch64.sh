#!/usr/bin/env bash
# The aarch64 check: the sdist built for and tested on 64-bit ARM Linux, under QEMU user-mode
# emulation on an x86-64 Linux machine, with gcc and with clang.
#
#   1. an arm64 Debian root (bookworm: python3 and its headers, libgomp, libomp-dev; with
#      build=native also gcc and clang), made by mmdebstrap from this machine's own configured
#      Debian sources; its pip configuration and certificates are copied in, so pip inside uses the
#      same package sources as the machine;
#   2. the sdist, made here from the working tree;
#   3. per compiler, a wheel of the sdist: with build=cross (the default) built here by the
#      machine's own aarch64 compilers (gcc-aarch64-linux-gnu; clang --target=aarch64-linux-gnu),
#      against the root's Python headers and OpenMP runtimes, at native speed; with build=native
#      built inside the root under emulation (`pip install <sdist>`), 10-20 times slower;
#   4. inside the root: a fresh virtual environment with the wheel and the test extras,
#      `python -m pooling --quick`, and the tests from the sdist: with `full` the whole suite (less
#      the type checkers), with `native` the tests that run the compiled code (tests/suites.py's
#      NATIVE_TESTS), with `kernels` the kernel tests (its KERNEL_TESTS: every strategy x dtype x
#      rank against the twin, index formats, NHWC, MaxUnpool, Col2Im).
#
# Usage: bash tools/check_aarch64.sh [gcc=S] [clang=S] [build=cross|native], S full, native, kernels
#        or no (default: gcc=native clang=kernels build=cross; CHECK_AARCH64_ROOT=DIR reuses or keeps the
#        arm64 root, CHECK_AARCH64_KEEP=1 keeps the temporary folder). Needs root (chroot,
#        binfmt_misc) and the Debian packages qemu-user-static, binfmt-support and mmdebstrap, and for
#        build=cross gcc-aarch64-linux-gnu and clang (each installed if missing).
# Exit status: 0 passed, 77 skipped (not Linux x86-64, not root, no binfmt_misc, the tools or the
# root could not be had), other = failed.  Speed means nothing under emulation: this checks
# results only (docs/development.md, "ARM check").
set -Eeuo pipefail
trap 'echo "check_aarch64: FAILED (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive
started=$SECONDS

step() { printf '\n== check_aarch64 [%4ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { printf '\ncheck_aarch64: FAILED: %s\n' "$*" >&2; exit 1; }
skip() { printf '\ncheck_aarch64: SKIPPED: %s\n' "$*" >&2; exit 77; }

declare -A SUITE=([gcc]=native [clang]=kernels)
BUILD=cross
for arg in "$@"; do
    if [[ "$arg" =~ ^build=(cross|native)$ ]]; then
        BUILD=${BASH_REMATCH[1]}
        continue
    fi
    [[ "$arg" =~ ^(gcc|clang)=(full|native|kernels|no)$ ]] ||
        fail "unknown argument $arg (gcc=|clang= full, native, kernels or no; build= cross or native)"
    SUITE[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done

[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] || skip "runs on x86-64 Linux (QEMU user mode)"
[[ "$(id -u)" == 0 ]] || skip "needs root for chroot and binfmt_misc"

packages=(qemu-user-static binfmt-support mmdebstrap)
commands=(qemu-aarch64-static update-binfmts mmdebstrap)
if [[ "$BUILD" == cross ]]; then
    packages+=(gcc-aarch64-linux-gnu clang)
    commands+=(aarch64-linux-gnu-gcc clang)
fi
step "tools: ${packages[*]}"
for c in "${commands[@]}"; do
    if ! command -v "$c" >/dev/null; then
        { apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=600 "${packages[@]}"; } >/dev/null ||
            skip "could not install ${packages[*]}"
        break
    fi
done
if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
        skip "binfmt_misc cannot be mounted here (a container without the privilege?)"
fi
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null ||
    skip "binfmt_misc has no enabled qemu-aarch64 entry"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_aarch64.XXXXXX")
ARM=${CHECK_AARCH64_ROOT:-$TMP/root}
MOUNTS=()
cleanup() {
    local m
    kill $(jobs -p) 2>/dev/null || true  # test runs still going (a later step failed)
    wait 2>/dev/null || true
    for m in "${MOUNTS[@]}"; do umount -l "$m" 2>/dev/null || true; done
    if [[ "${CHECK_AARCH64_KEEP:-0}" == 1 ]]; then
        echo "check_aarch64: kept $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

include=python3,python3-venv,python3-dev,libgomp1,libomp-dev
[[ "$BUILD" == native ]] && include+=,gcc,g++,clang
if [[ -x "$ARM/usr/bin/python3" && -e "$ARM/usr/include/python3.11/Python.h" &&
        ( "$BUILD" == cross || -x "$ARM/usr/bin/clang" ) ]]; then
    step "arm64 root: reusing $ARM"
else
    step "arm64 root: mmdebstrap (bookworm) from this machine's Debian sources"
    sources=()
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list; do
        [[ -s "$f" ]] && sources+=("$f")
    done
    [[ ${#sources[@]} -gt 0 ]] || skip "this machine has no Debian package sources configured"
    mkdir -p "$(dirname "$ARM")"
    if ! mmdebstrap --architectures=arm64 --variant=apt \
            --include="$include" \
            bookworm "$ARM" "${sources[@]}" >"$TMP/mmdebstrap.log" 2>&1; then
        tail -n 30 "$TMP/mmdebstrap.log" >&2
        skip "mmdebstrap could not make the arm64 root (log above)"
    fi
fi
[[ "$(chroot "$ARM" uname -m)" == aarch64 ]] || fail "the root does not run as aarch64"

step "the machine's pip configuration and certificates, into the root"
for f in /etc/pip.conf /etc/xdg/pip /root/.config/pip /root/.pip /etc/ssl/certs/ca-certificates.crt \
         /etc/resolv.conf; do
    if [[ -e "$f" ]]; then
        mkdir -p "$ARM$(dirname "$f")"
        rm -rf "${ARM:?}$f"
        cp -rL "$f" "$ARM$f"
    fi
done
# (Local indexes or wheel folders the configuration names are not there: pip skips them with a
# warning and uses the configured index; their wheels are x86-64 ones anyway.)
for d in proc dev; do
    if ! mountpoint -q "$ARM/$d"; then
        mount --bind "/$d" "$ARM/$d" && MOUNTS+=("$ARM/$d")
    fi
done
pipenv=$(env | grep '^PIP_' | tr '\n' ' ' || true)

step "sdist from the working tree"
"$PYTHON" -m venv "$TMP/tools"
"$TMP/tools/bin/python" -m pip install -q build || skip "could not install build"
# From a copy of the tracked files: CI runs this beside steps that build in the working tree (and
# write its src/*.egg-info, which the sdist's manifest reads).
tree=$REPO
if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
    tree=$TMP/tree
    mkdir -p "$tree"
    git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 cp --parents -t "$tree")
fi
"$TMP/tools/bin/python" -m build --sdist --outdir "$TMP/dist" "$tree" >"$TMP/sdist.log" 2>&1 ||
    { tail -n 30 "$TMP/sdist.log" >&2; fail "python -m build --sdist (log above)"; }
sdist=$(ls "$TMP"/dist/*.tar.gz)
rm -rf "$ARM/check" && mkdir -p "$ARM/check"
cp "$sdist" "$ARM/check/"
tar -xzf "$sdist" -C "$ARM/check"
src=$(cd "$ARM/check" && ls -d */ | head -n 1)

# The kernel tests and the native tests: tests/suites.py's KERNEL_TESTS and NATIVE_TESTS (the files
# of each, with tests/test_simd.py).
test_list() { "$PYTHON" "$REPO/tests/suites.py" "$1"; }
# The test extra less what these runs do not use: onnx and onnxruntime (the ONNX cross-checks run on
# x86), mypy (the type checkers), build and trove-classifiers (the packaging tests): minutes less of
# installing under emulation.
test_requires=$("$PYTHON" -c 'import re, sys, tomllib
extra = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]
unused = {"onnx", "onnxruntime", "mypy", "build", "trove-classifiers"}
print(" ".join(f"\x27{r}\x27" for r in extra if re.match(r"[\w.-]+", r).group(0).lower() not in unused))' \
    "$REPO/pyproject.toml")
declare -A TESTS=([full]="tests -m 'not typecheck'" [native]="$(test_list NATIVE_TESTS)"
                  [kernels]="$(test_list KERNEL_TESTS)")

# build=cross: the root's Python must be the tools' Python version (the wheel's tag, its headers).
pyver=$(chroot "$ARM" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [[ "$BUILD" == cross && "$("$TMP/tools/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$pyver" ]]; then
    skip "build=cross needs $PYTHON to be Python $pyver, the root's (PYTHON=python$pyver, or build=native)"
fi

# wheel CC: the sdist built here for aarch64 by CC (gcc or clang), into $TMP/wheels-CC.  setuptools
# reads the target from the root's sysconfig data (_PYTHON_SYSCONFIGDATA_NAME: the extension suffix,
# the compiler's flags) and the root's Python headers; the OpenMP runtimes are the cross gcc's
# libgomp and the root's libomp (the root has both at run time).  numpy's headers (for
# pooling._runtime) are the tools venv's: their few size macros agree on x86-64 and aarch64 Linux.
cross_wheel() {
    local cc=$1 host=$TMP/host-$1 env=()
    if [[ ! -d "$TMP/cross" ]]; then
        mkdir -p "$TMP/cross/sysconfig" "$TMP/cross/include" "$TMP/cross/omp"
        cp "$ARM"/usr/lib/python$pyver/_sysconfigdata__aarch64-linux-gnu.py "$TMP/cross/sysconfig/"
        ln -s "$ARM/usr/include/aarch64-linux-gnu" "$TMP/cross/include/"  # pyconfig.h's own include
        ln -s "$(ls "$ARM"/usr/lib/llvm-*/lib/clang/*/include/omp.h | head -n 1)" "$TMP/cross/omp/"
        "$TMP/tools/bin/python" -m pip install -q $("$TMP/tools/bin/python" -c 'import tomllib
print(" ".join(tomllib.load(open("'"$REPO"'/pyproject.toml", "rb"))["build-system"]["requires"]))') ||
            skip "could not install the build requirements"
    fi
    if [[ "$cc" == gcc ]]; then
        env=(CC=aarch64-linux-gnu-gcc LDSHARED="aarch64-linux-gnu-gcc -shared"
             CFLAGS="-I$ARM/usr/include/python$pyver -I$TMP/cross/include")
    else
        env=(CC="clang --target=aarch64-linux-gnu" LDSHARED="clang --target=aarch64-linux-gnu -shared"
             CFLAGS="-I$ARM/usr/include/python$pyver -I$TMP/cross/include -I$TMP/cross/omp"
             LDFLAGS="-L$(dirname "$(ls "$ARM"/usr/lib/llvm-*/lib/libomp.so | head -n 1)")")
    fi
    rm -rf "$host" && mkdir -p "$host" && tar -xzf "$sdist" -C "$host" --strip-components=1
    (cd "$host" && env _PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__aarch64-linux-gnu \
        PYTHONPATH="$TMP/cross/sysconfig" _PYTHON_HOST_PLATFORM=linux-aarch64 POOLING_REQUIRE_OPENMP=1 \
        "${env[@]}" "$TMP/tools/bin/python" -m pip wheel -q --no-build-isolation --no-deps \
        -w "$TMP/wheels-$cc" . >"$TMP/build-$cc.log" 2>&1) ||
        { tail -n 40 "$TMP/build-$cc.log" >&2; fail "$cc: the cross build (log above)"; }
}

# Each compiler's wheel installed and `python -m pooling --quick` run, one after the other; then
# the compilers' tests side by side (each a process under emulation: on 2 cores they share the
# machine with CI's x86 steps, which mostly use one).
started_tests=()
for cc in gcc clang; do
    suite=${SUITE[$cc]}
    [[ "$suite" == no ]] && continue
    if [[ "$BUILD" == cross ]]; then
        step "$cc: build a wheel of the sdist here, for aarch64"
        cross_wheel "$cc"
        wheel=$(ls "$TMP/wheels-$cc"/*.whl)
        mkdir -p "$ARM/check/$cc" && cp "$wheel" "$ARM/check/$cc/"
        target="/check/$cc/$(basename "$wheel")"
        step "$cc: install the wheel with the test extras"
    else
        target="/check/$(basename "$sdist")"
        step "$cc: build the sdist and install it with the test extras"
    fi
    cxx=g++
    [[ "$cc" == clang ]] && cxx=clang++
    # A venv per compiler.  With build=cross the test extras (minutes to install under emulation)
    # go into the first one only; the next is its copy, the wheel replaced (by python -m pip: a
    # copied venv's scripts still name the first one's interpreter).
    venv=/venv-$cc
    install="rm -rf $venv; python3 -m venv $venv; $venv/bin/pip install -q '$target' $test_requires"
    if [[ "$BUILD" == cross && -n "${first_venv:-}" ]]; then
        install="rm -rf $venv; cp -a $first_venv $venv
                 $venv/bin/python -m pip install -q --force-reinstall --no-deps '$target'"
    fi
    first_venv=${first_venv:-$venv}
    if ! chroot "$ARM" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin $pipenv CC=$cc CXX=$cxx \
            bash -c "set -e; $install
                     cd /check/$src && $venv/bin/python -m pooling --quick
                     $venv/bin/python -c 'import pooling; pooling.show_config()' | grep -E '^(compiler|openmp|simd)'" \
            2>&1 | tail -n 25; then
        fail "$cc: install or python -m pooling --quick"
    fi
    # full: the whole suite less the type checkers (mypy and pyright read the annotations: the same
    # on every machine, and minutes under emulation; the README's test command runs them).
    tests=${TESTS[$suite]}
    step "$cc: the $suite tests, started"
    chroot "$ARM" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin \
        bash -c "cd /check/$src && $venv/bin/python -m pytest $(echo $tests) -q -p no:cacheprovider \
                 -p no:logging -p no:warnings --basetemp=/tmp/pytest-$cc" >"$TMP/pytest-$cc.log" 2>&1 &
    started_tests+=("$cc:$suite:$!")
done
status=0
for entry in "${started_tests[@]}"; do
    IFS=: read -r cc suite pid <<<"$entry"
    if wait "$pid"; then
        echo "$cc: $(tail -n 1 "$TMP/pytest-$cc.log")"  # (pytest's line says how long it took)
    else
        tail -n 60 "$TMP/pytest-$cc.log"
        echo "$cc: the $suite tests FAILED"
        status=1
    fi
done
step "done"
exit $status
