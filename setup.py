"""Build pooling._core from src/_core.pyx (and its includes, src/kernels/*.pxi).

Four extensions: the kernels three times, pooling._core (baseline: on x86-64
the x86-64-v2 level, SSE4.2 and POPCNT, as numpy 2.4's wheels; plain x86-64 with
POOLING_X86_BASELINE=x86-64), pooling._core_avx2 (AVX2 + FMA + F16C) and
pooling._core_avx512 (AVX-512 F/VL/DQ with 512-bit vectors preferred; each where
the compiler can), and pooling._runtime (src/_runtime.pyx: helpers that are not
kernels, and the CPU checks made before any kernel build loads), built once for
plain x86-64.

OpenMP is probed by compiling and linking a tiny program with the flags of the
compiler in use.  Without it the extension is built serial (with a warning),
unless POOLING_REQUIRE_OPENMP=1, which makes a missing OpenMP a build error so
that no release wheel ships without threads.  POOLING_DEBUG=1 turns Cython's
bounds and wraparound checks on and builds with -g (for sanitizer and debugging
builds).

Besides the ISA flags above, only -O3 and -g0 are added to the compiler's own
flags (no -march=native): wheels must run on any CPU of their platform's
baseline, and carry no debug information
(Python's own CFLAGS usually have -g, which made each kernel build 6-7 MB
instead of about 1 MB).  -g in $CFLAGS keeps debug information without
POOLING_DEBUG's checks (for profilers); an -O level in $CFLAGS replaces -O3
(tools/sanitize.sh builds with -O1, half the compile time).  The compiler
command, flags and OpenMP settings are written to pooling/_build_info.py (generated, never committed)
for pooling.show_config().

Builds are reused (see _cythonize and BuildExt.build_extensions): `pip install .`
builds in a fresh isolated environment each time, but it runs this file in the
source tree, so the .c files in src/ and the compiled modules in build/ survive
from one install to the next and are remade only when their inputs changed.
"""
import glob
import hashlib
import json
import os
import pprint
import shlex
import shutil
import sys
import sysconfig
import tempfile
import textwrap
import warnings

import Cython
import numpy
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


X86_V2_PROBE = textwrap.dedent(
    """
    #include <nmmintrin.h>
    int main(void) {
        __m128i a = _mm_cmpgt_epi64(_mm_set1_epi64x(2), _mm_set1_epi64x(1));
        a = _mm_max_epi32(_mm_shuffle_epi8(a, a), _mm_min_epu16(a, a));
        return _mm_popcnt_u32((unsigned)_mm_cvtsi128_si32(a)) == 32 ? 0 : 1;
    }
    """
)


AVX2_PROBE = textwrap.dedent(
    """
    #include <immintrin.h>
    int main(void) {
        __m256 a = _mm256_set1_ps(1.0f);
        a = _mm256_fmadd_ps(a, a, _mm256_max_ps(a, _mm256_cvtph_ps(_mm_set1_epi16(0x3c00))));
        return (int)_mm256_cvtss_f32(a) == 2 ? 0 : 1;
    }
    """
)


AVX512_PROBE = textwrap.dedent(
    """
    #include <immintrin.h>
    int main(void) {
        __m512 a = _mm512_set1_ps(1.0f);
        __m512i b = _mm512_max_epi32(_mm512_set1_epi32(1), _mm512_set1_epi32(2));
        __m256 c = _mm256_maskz_max_ps(0xff, _mm256_set1_ps(1.0f), _mm256_set1_ps(2.0f));
        __m512d d = _mm512_and_pd(_mm512_set1_pd(1.0), _mm512_set1_pd(1.0));
        a = _mm512_max_ps(a, a);
        return (int)_mm512_reduce_max_ps(a) + _mm512_reduce_max_epi32(b) + (int)_mm256_cvtss_f32(c)
               + (int)_mm512_reduce_max_pd(d) == 6 ? 0 : 1;
    }
    """
)


def _baseline_flags(compiler):
    """Flags for the baseline kernels (pooling._core): x86-64-v2 (SSE3 to SSE4.2 and POPCNT) where
    the compiler targets x86-64 and can, the level numpy 2.4's own wheels require; [] elsewhere,
    or with POOLING_X86_BASELINE=x86-64 (plain x86-64, SSE2: for CPUs older than about 2009, where
    pooling then runs the 8-byte integers without a vector compare).  docs/design.md, SIMD builds."""
    level = os.environ.get("POOLING_X86_BASELINE", "x86-64-v2").strip().lower()
    if level not in ("x86-64-v2", "x86-64"):
        raise ValueError(f"pooling-kernels: POOLING_X86_BASELINE must be 'x86-64-v2' or 'x86-64', got {level!r}")
    if level == "x86-64":
        return []
    if compiler.compiler_type == "msvc" and not _is_clang_cl(compiler):
        return []  # (MSVC's /arch:SSE4.2 is recent, and its vectoriser was never measured on it)
    return _probe_flags(compiler, ["-msse4.2", "-mpopcnt"], X86_V2_PROBE) or []


def _avx2_flags(compiler):
    """Flags that compile AVX2 + FMA code with this compiler, or None (other ISAs, old compilers)."""
    if compiler.compiler_type != "msvc" or _is_clang_cl(compiler):
        # (clang-cl's /arch:AVX2 targets a whole CPU, Haswell: more than pk_cpu_has_avx2 checks)
        flags = ["-mavx2", "-mfma", "-mf16c"]
    else:
        flags = ["/arch:AVX2"]
    return _probe_flags(compiler, flags, AVX2_PROBE)


def _is_clang_cl(compiler):
    return os.path.basename(str(getattr(compiler, "cc", ""))).lower().startswith("clang-cl")


def _msvc_with(compiler, cc):
    """setuptools' MSVC compiler with another cl-compatible driver for the C files: POOLING_MSVC_CC,
    clang-cl for the Windows wheels, whose GCC vector extensions and atomics give Windows the
    hand-written vector loops and the thread pool (MSVC has neither: docs/development.md, "Windows'
    path").  Linking stays link.exe; LLVM's lib folder (libomp.lib, clang-cl's OpenMP) joins the
    library path."""
    if not getattr(compiler, "initialized", True):
        compiler.initialize()
    path = shutil.which(cc) or cc
    compiler.cc = path
    lib = os.path.join(os.path.dirname(os.path.dirname(path)), "lib")
    if os.path.isdir(lib):
        compiler.add_library_dir(lib)
    # clang's own headers before Visual Studio's, which setuptools passes as /I: its omp.h, not MSVC's
    # OpenMP 2.0 one.
    for include in sorted(glob.glob(os.path.join(lib, "clang", "*", "include")))[-1:]:
        compiler.include_dirs.insert(0, include)


def _avx512_flags(compiler):
    """Flags that compile AVX-512 (F, VL, DQ) code that the compiler vectorises with 512-bit
    vectors, or None.  Not with MSVC, whose AVX-512 code was never measured.  Not BW: with it,
    gcc 12.2's build gave wrong float16 whole-plane maxima (docs/design.md, SIMD builds)."""
    if compiler.compiler_type == "msvc":
        return None
    flags = ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512dq",
             "-mprefer-vector-width=512"]
    return _probe_flags(compiler, flags, AVX512_PROBE)


def _probe_flags(compiler, flags, probe):
    """flags if this compiler compiles the probe program with them, else None."""
    tmp = tempfile.mkdtemp(prefix="pooling-simd-")
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(probe)
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
        # clang-cl's objects do not name their OpenMP runtime (its own link step would add it, and
        # setuptools links with link.exe): libomp.lib, from _msvc_with's library folder.
        return [(["/openmp"], ["libomp.lib"] if _is_clang_cl(compiler) else [])]
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


def _cflags_choose(prefix):
    """Whether $CFLAGS has a flag starting with `prefix` (then setup.py adds none of its own)."""
    return any(flag.startswith(prefix) for flag in shlex.split(os.environ.get("CFLAGS", "")))


def _optimize_flags():
    """-O3, unless $CFLAGS chooses a level (any -O... there)."""
    return [] if _cflags_choose("-O") else ["-O3"]


def _debug_info_flags(compiler):
    """-g for POOLING_DEBUG=1 builds, -g0 otherwise, unless $CFLAGS chooses (any -g... there)."""
    if compiler.compiler_type == "msvc":  # its flags carry no debug information
        return []
    if debug:
        return ["-g"]
    if _cflags_choose("-g"):
        return []
    # Python's own CFLAGS (sysconfig) usually have -g; a later -g0 cancels it.
    return ["-g0"]


# --- Reusing earlier builds ---------------------------------------------------------
# pip builds every `pip install .` (`".[test]"`, `".[bench]"`) in a new isolated
# environment, so every file of Cython there is new.  Cython's own check (regenerate
# a .c file older than any of its dependencies, Cython's bundled .pxd files among
# them) then regenerated all three .c files, and build_ext, which rebuilds a module
# older than its sources, recompiled everything: about 100 s per install on 2 cores.
# Instead:
#   - a .c file is regenerated only when the digest of what Cython reads (this
#     Cython's version, the directives, the contents of the .pyx and of every file it
#     includes or cimports) differs from the one recorded when it was made, or the
#     file changed since (build/pooling-cython-keys.json);
#   - a module is rebuilt when build_ext's own check says so (a .c file or a header
#     newer than it), or when the compiler, its flags or the Python differ from those
#     recorded when it was built (pooling-compile-keys.json in the build_temp folder).
CYTHON_KEYS = os.path.join("build", "pooling-cython-keys.json")


def _digest(*parts):
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _read_keys(path):
    try:
        with open(path) as f:
            keys = json.load(f)
        return keys if isinstance(keys, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_keys(path, keys):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(keys, f, indent=1, sort_keys=True)


def _file_stamp(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _cython_input_key(tree, pyx):
    """Digest of everything Cython reads for `pyx` (contents, not paths or times), or None."""
    try:
        contents = []
        for path in tree.all_dependencies(pyx):
            with open(path, "rb") as f:
                contents.append(hashlib.sha256(f.read()).hexdigest())
    except Exception:  # an unknown Cython: fall back to regenerating
        return None
    return _digest(Cython.__version__, sorted(directives.items()), sorted(contents))


def _render_templates():
    """src/kernels/*.pxi.in -> *.pxi with Cython's Tempita (the repeated dtype dispatch, written once).
    A .pxi is rewritten only when its text changes, so the keys above see what changed, and only that."""
    from Cython import Tempita

    for template in sorted(glob.glob(os.path.join("src", "kernels", "*.pxi.in"))):
        with open(template, encoding="utf-8") as f:
            text = Tempita.sub(f.read())
        target = template[: -len(".in")]
        try:
            with open(target, encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)


def _cythonize(extensions, jobs=1):
    """Point each extension at its generated .c file, regenerating only those whose inputs changed.

    Each SIMD build's module is its own Cython run; on Linux they run side by side in `jobs`
    processes before the C compiles start (docs/development.md, "Set-up").  Cython's workers start
    by the platform's default method: where that is not fork (forkserver from Python 3.14), each
    imports this file as a module, which is why setup() below runs only as __main__.
    """
    _render_templates()
    try:
        from Cython.Build.Dependencies import create_dependency_tree

        tree = create_dependency_tree()
    except Exception:
        tree = None
    recorded = _read_keys(CYTHON_KEYS)
    keys, stale = {}, []
    for ext in extensions:
        (pyx,) = ext.sources
        if not pyx.endswith(".pyx"):  # already done in this process
            continue
        c_file = os.path.splitext(pyx)[0] + ".c"
        keys[ext.name] = key = tree and _cython_input_key(tree, pyx)
        entry = recorded.get(c_file)
        if key and os.path.exists(c_file) and entry == {"key": key, "file": _file_stamp(c_file)}:
            ext.sources = [c_file]  # what cythonize() would have made of it
        else:
            stale.append(ext)
    if stale:
        nthreads = min(jobs, len(stale)) if sys.platform.startswith("linux") else 0
        made = {ext.name: ext for ext in cythonize(stale, compiler_directives=directives, force=True,
                                                   nthreads=nthreads if nthreads > 1 else 0)}
        for ext in stale:
            ext.sources = made[ext.name].sources
            (c_file,) = ext.sources
            if keys[ext.name]:
                recorded[c_file] = {"key": keys[ext.name], "file": _file_stamp(c_file)}
            else:
                recorded.pop(c_file, None)
        _write_keys(CYTHON_KEYS, recorded)


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # compile the extensions side by side
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        compiler = self.compiler
        if compiler.compiler_type == "msvc" and os.environ.get("POOLING_MSVC_CC"):
            _msvc_with(compiler, os.environ["POOLING_MSVC_CC"])
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
        # The AVX2 and AVX-512 builds of the same kernels beside the baseline one, chosen at run
        # time on CPUs that have those instructions (pooling._dispatch, pooling._tuning); where the
        # compiler cannot target them they are left out.
        avx2 = _avx2_flags(compiler)
        baseline = _baseline_flags(compiler)
        simd = {"pooling._core": baseline,
                "pooling._core_avx2": avx2,
                "pooling._core_avx512": _avx512_flags(compiler) if avx2 else None}
        # pooling._runtime stays plain x86-64: it tells pooling._dispatch whether this CPU can run
        # the baseline kernels (pk_cpu_runs_baseline) before they are loaded.
        for ext in self.extensions:
            if ext.name == "pooling._runtime":
                ext.define_macros = [m for m in ext.define_macros if m[0] != "PK_KERNELS_X86_V2"]
                ext.define_macros.append(("PK_KERNELS_X86_V2", "1" if baseline else "0"))
        self.extensions = [e for e in self.extensions if simd.get(e.name, []) is not None]
        # Cython runs here, not when setup.py starts: building an sdist or the metadata needs no .c files.
        _cythonize(self.extensions, int(self.parallel or 1))
        self._debug_info_flags = _debug_info_flags(compiler)
        for ext in self.extensions:
            ext.extra_compile_args += simd.get(ext.name, [])
            if compiler.compiler_type == "msvc":
                ext.extra_compile_args += ["/O2"]
                if _is_clang_cl(compiler):  # as the other compilers build (below)
                    ext.extra_compile_args += ["/clang:-O3", "/clang:-falign-functions=64"]
            else:
                # The platform's baseline ISA only (x86-64-v2 for the kernels, above); faster
                # instruction sets are a run-time choice, never -march=native.
                # Functions start on 64-byte lines, so the hot loops inside one sit where its own
                # code puts them: without it an unrelated change elsewhere in the module moved
                # ROWS_FIRST's body by 16 bytes and slowed it (docs/tuning.md#function-alignment-setuppy).
                ext.extra_compile_args += _optimize_flags() + ["-std=c11", "-falign-functions=64"]
            ext.extra_compile_args += self._debug_info_flags
            if flags is not None:
                ext.extra_compile_args += flags[0]
                ext.extra_link_args += flags[1]

        # A module built with other flags, by another compiler or for another Python
        # is rebuilt (build_ext itself compares only file times).
        keys_file = os.path.join(self.build_temp, "pooling-compile-keys.json")
        recorded = _read_keys(keys_file)
        keys = {ext.name: self._compile_key(ext) for ext in self.extensions}
        for ext in self.extensions:
            target = self.get_ext_fullpath(ext.name)
            if recorded.get(ext.name) != keys[ext.name] and os.path.exists(target):
                os.remove(target)

        super().build_extensions()
        _write_keys(keys_file, {**recorded, **keys})
        self._build_info_file = self._record_build_info()

    def _compile_key(self, ext):
        compiler = self.compiler
        command = [getattr(compiler, attr, None)
                   for attr in ("compiler_so", "linker_so", "compile_options", "ldflags_shared", "cc", "linker")]
        return _digest(
            sys.version, sysconfig.get_config_var("EXT_SUFFIX"), command,
            self.include_dirs, self.library_dirs, self.libraries, self.define,
            ext.sources, ext.include_dirs, ext.define_macros, ext.undef_macros, ext.libraries,
            ext.library_dirs, ext.extra_compile_args, ext.extra_link_args, ext.extra_objects,
        )

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
            # Whether the modules carry debug information (-g): POOLING_DEBUG=1 or -g in $CFLAGS.
            "debug_info": compiler.compiler_type != "msvc" and self._debug_info_flags != ["-g0"],
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
# pooling._runtime alone uses numpy's C API (its memory handler, include/pooling_results.h), for
# numpy 1.25 and later as the package's dependency says: headers of numpy 2 build for those.
numpy_api = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
extensions = [
    Extension(
        name,
        [source],
        include_dirs=["include"],
        define_macros=numpy_api,
        depends=depends + (["src/_core.pyx"] if name.startswith("pooling._core_") else []),
    )
    for name, source in (
        ("pooling._core", "src/_core.pyx"),
        ("pooling._core_avx2", "src/_core_avx2.pyx"),
        ("pooling._core_avx512", "src/_core_avx512.pyx"),
    )
] + [
    Extension(
        "pooling._runtime",
        ["src/_runtime.pyx"],
        include_dirs=["include", numpy.get_include()],
        define_macros=numpy_api + [("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION")],
        depends=depends,
    )
]

if __name__ == "__main__":  # not in the Cython workers of _cythonize (they import this file)
    setup(
        ext_modules=extensions,
        cmdclass={"build_ext": BuildExt},
    )
