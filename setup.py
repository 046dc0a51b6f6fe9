"""Build pooling._core from src/_core.pyx (and its includes, src/kernels/*.pxi).

Three extensions: the kernels twice, pooling._core (baseline) and
pooling._core_avx2 (AVX2 + FMA, where the compiler can), and pooling._runtime
(src/_runtime.pyx: helpers that are not kernels), built once with the
baseline flags.

OpenMP is probed by compiling and linking a tiny program with the flags of the
compiler in use.  Without it the extension is built serial (with a warning),
unless POOLING_REQUIRE_OPENMP=1, which makes a missing OpenMP a build error so
that no release wheel ships without threads.  POOLING_DEBUG=1 turns Cython's
bounds and wraparound checks on (for sanitizer and debugging builds).

Only -O3 is added to the compiler's own flags (no -march=native): wheels must
run on any CPU of their platform.  The compiler command, flags and OpenMP
settings are written to pooling/_build_info.py (generated, never committed)
for pooling.show_config().
"""
import glob
import os
import pprint
import shlex
import shutil
import sys
import tempfile
import textwrap
import warnings

import Cython
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENMP_PROBE = textwrap.dedent(
    """
    #include <omp.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += 1;
        return n > 0 ? 0 : 1;
    }
    """
)


AVX2_PROBE = textwrap.dedent(
    """
    #include <immintrin.h>
    int main(void) {
        __m256 a = _mm256_set1_ps(1.0f);
        a = _mm256_fmadd_ps(a, a, _mm256_max_ps(a, a));
        return (int)_mm256_cvtss_f32(a) == 2 ? 0 : 1;
    }
    """
)


def _avx2_flags(compiler):
    """Flags that compile AVX2 + FMA code with this compiler, or None (other ISAs, old compilers)."""
    flags = ["/arch:AVX2"] if compiler.compiler_type == "msvc" else ["-mavx2", "-mfma"]
    tmp = tempfile.mkdtemp(prefix="pooling-avx2-")
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(AVX2_PROBE)
        try:
            compiler.compile([src], output_dir=tmp, extra_postargs=flags)
        except Exception:
            return None
        return flags
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _openmp_flags(compiler):
    """(compile_args, link_args) candidates for this compiler, most likely first."""
    if compiler.compiler_type == "msvc":
        return [(["/openmp"], [])]
    if sys.platform == "darwin":
        return [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    return [(["-fopenmp"], ["-fopenmp"])]


def _probe_openmp(compiler):
    """The flags that compile *and link* an OpenMP program, or None."""
    # distutils adds $LDFLAGS to the command that links extensions but not to the
    # one that links executables, so the probe would miss an OpenMP runtime the
    # extension itself finds (macOS: LDFLAGS=-L<libomp prefix>/lib).
    ldflags = [] if compiler.compiler_type == "msvc" else shlex.split(os.environ.get("LDFLAGS", ""))
    tmp = tempfile.mkdtemp(prefix="pooling-omp-")
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(OPENMP_PROBE)
        for cflags, lflags in _openmp_flags(compiler):
            try:
                objs = compiler.compile([src], output_dir=tmp, extra_postargs=cflags)
                compiler.link_executable(
                    objs, "probe", output_dir=tmp, extra_preargs=ldflags, extra_postargs=lflags
                )
            except Exception:
                continue
            return cflags, lflags
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # compile the extensions side by side
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        compiler = self.compiler
        flags = _probe_openmp(compiler)
        if flags is None:
            if os.environ.get("POOLING_REQUIRE_OPENMP") == "1":
                raise RuntimeError(
                    "pooling-kernels: POOLING_REQUIRE_OPENMP=1 but this compiler cannot build "
                    "and link an OpenMP program"
                )
            warnings.warn(
                "pooling-kernels: OpenMP not found; building a serial extension "
                "(every kernel will run on one thread)",
                stacklevel=1,
            )
        # The AVX2 build of the same kernels, chosen at run time on CPUs that
        # have AVX2 and FMA; where the compiler cannot target them it is left out.
        avx2 = _avx2_flags(compiler)
        if avx2 is None:
            self.extensions = [e for e in self.extensions if e.name != "pooling._core_avx2"]
        for ext in self.extensions:
            if ext.name == "pooling._core_avx2":
                ext.extra_compile_args += avx2
            if compiler.compiler_type == "msvc":
                ext.extra_compile_args += ["/O2"]
            else:
                # Baseline ISA only (wheels must run on any x86-64); faster
                # instruction sets are a run-time choice, never -march=native.
                ext.extra_compile_args += ["-O3", "-std=c11"]
            if flags is not None:
                ext.extra_compile_args += flags[0]
                ext.extra_link_args += flags[1]

        super().build_extensions()
        self._build_info_file = self._record_build_info()

    def run(self):
        super().run()
        # setuptools compiles an --inplace build in build/ and copies only the
        # extension back into src/, so copy the build facts along with it.
        if self.inplace and getattr(self, "_build_info_file", None):
            dest = os.path.join(os.path.dirname(self.get_ext_fullpath("pooling._core")), "_build_info.py")
            if os.path.abspath(dest) != os.path.abspath(self._build_info_file):
                shutil.copyfile(self._build_info_file, dest)

    def _record_build_info(self):
        """Write pooling/_build_info.py next to the extension for pooling.show_config().

        This records the facts only the build knows: the full compiler command
        (with $CFLAGS) and the flags setup.py added, OpenMP's among them.
        """
        compiler = self.compiler
        ext = next(e for e in self.extensions if e.name == "pooling._core")
        command = getattr(compiler, "compiler_so", None) or [
            getattr(compiler, "cc", compiler.compiler_type),
            *getattr(compiler, "compile_options", []),
        ]
        info = {
            "compiler_type": compiler.compiler_type,
            "compiler_command": [str(part) for part in command],
            "extra_compile_args": list(ext.extra_compile_args),
            "extra_link_args": list(ext.extra_link_args),
            "cython": Cython.__version__,
            "debug": debug,
        }
        path = os.path.join(os.path.dirname(self.get_ext_fullpath(ext.name)), "_build_info.py")
        with open(path, "w") as f:
            f.write('"""Build facts that setup.py records when it compiles pooling._core (generated)."""\n')
            f.write(f"BUILD_INFO = {pprint.pformat(info, sort_dicts=False)}\n")
        return path


debug = os.environ.get("POOLING_DEBUG") == "1"
directives = {
    "language_level": 3,
    "boundscheck": debug,
    "wraparound": debug,
    "initializedcheck": debug,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}

# A change to any included kernel file or C header must rebuild the extensions
# (cythonize follows `include`, and depends makes the C compile follow too).
depends = sorted(glob.glob("src/kernels/*.pxi") + glob.glob("include/*.h"))
extensions = [
    Extension(
        name,
        [source],
        include_dirs=["include"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        depends=depends + (["src/_core.pyx"] if name == "pooling._core_avx2" else []),
    )
    for name, source in (
        ("pooling._core", "src/_core.pyx"),
        ("pooling._core_avx2", "src/_core_avx2.pyx"),
        ("pooling._runtime", "src/_runtime.pyx"),
    )
]

setup(
    ext_modules=cythonize(extensions, compiler_directives=directives),
    cmdclass={"build_ext": BuildExt},
)
