#!/usr/bin/env bash
# Build LLVM's OpenMP runtime (libomp) for the macOS release wheels.
#
# Apple's clang compiles OpenMP (-Xpreprocessor -fopenmp) but ships no runtime.
# Homebrew's libomp targets the macOS version of the machine that built it, and
# delocate refuses to vendor a library that needs a newer macOS than the wheel's
# tag. So this script builds libomp from the pinned LLVM release, for this
# machine's architecture and for $MACOSX_DEPLOYMENT_TARGET, into $LIBOMP_PREFIX.
# The install name is absolute, so delocate finds the library and copies it into
# the wheel. cibuildwheel runs this as macOS before-all (see pyproject.toml),
# which also passes the include and library directories on to the build.
#
#   MACOSX_DEPLOYMENT_TARGET=11.0 LIBOMP_PREFIX=/tmp/libomp bash tools/build_libomp_macos.sh
set -euo pipefail

LLVM_VERSION=19.1.7
OPENMP_SHA256=bd7e6901ab086fd268750363017935fd4a717c153dad3c2aab86cb0140d9e3fe
CMAKE_SHA256=11c5a28f90053b0c43d0dec3d0ad579347fc277199c005206b963c19aae514e3
: "${MACOSX_DEPLOYMENT_TARGET:?set MACOSX_DEPLOYMENT_TARGET to the minimum macOS of the wheels}"
: "${LIBOMP_PREFIX:?set LIBOMP_PREFIX to the install folder}"
ARCH=${LIBOMP_ARCH:-$(uname -m)}

if [[ "$(uname -s)" != Darwin ]]; then
    echo "build_libomp_macos.sh: macOS only" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fetch() {  # fetch NAME SHA256: download the LLVM source tarball NAME and check it
    local url="https://github.com/llvm/llvm-project/releases/download/llvmorg-$LLVM_VERSION/$1-$LLVM_VERSION.src.tar.xz"
    curl --fail --silent --show-error --location --retry 3 -o "$1.tar.xz" "$url"
    if [[ "$(shasum -a 256 "$1.tar.xz" | cut -d' ' -f1)" != "$2" ]]; then
        echo "build_libomp_macos.sh: SHA-256 mismatch for $url" >&2
        exit 1
    fi
    tar -xf "$1.tar.xz"
}
fetch openmp "$OPENMP_SHA256"
fetch cmake "$CMAKE_SHA256"
# The openmp sources expect LLVM's shared CMake modules at ../cmake.
mv "cmake-$LLVM_VERSION.src" cmake

# The wheel build's CPPFLAGS/LDFLAGS point at the prefix that does not exist yet.
env -u CPPFLAGS -u CFLAGS -u LDFLAGS cmake -S "openmp-$LLVM_VERSION.src" -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$LIBOMP_PREFIX" \
    -DCMAKE_INSTALL_NAME_DIR="$LIBOMP_PREFIX/lib" \
    -DCMAKE_OSX_ARCHITECTURES="$ARCH" \
    -DCMAKE_OSX_DEPLOYMENT_TARGET="$MACOSX_DEPLOYMENT_TARGET" \
    -DLIBOMP_INSTALL_ALIASES=OFF \
    -DOPENMP_ENABLE_LIBOMPTARGET=OFF \
    -DLIBOMP_OMPD_SUPPORT=OFF \
    -DOPENMP_ENABLE_OMPT_TOOLS=OFF
cmake --build build --parallel "$(sysctl -n hw.ncpu)"
cmake --install build

lib="$LIBOMP_PREFIX/lib/libomp.dylib"
install_name_tool -id "$lib" "$lib"
minos=$(otool -l "$lib" | awk '/LC_BUILD_VERSION/ {found = 1} found && $1 == "minos" {print $2; exit}')
if [[ "$minos" != "$MACOSX_DEPLOYMENT_TARGET" ]]; then
    echo "build_libomp_macos.sh: $lib needs macOS $minos, not $MACOSX_DEPLOYMENT_TARGET" >&2
    exit 1
fi
echo "libomp $LLVM_VERSION for $(lipo -archs "$lib"), macOS >= $minos: $lib"
