"""Named parts of the test suite, for the checks that run only a part of it.

    python tests/suites.py NAME    # the part's files, as paths from the project root, with
                                   # tests/test_simd.py (which runs the kernel tests under every
                                   # other SIMD build of the same tree)

Plain lists (the os module only): the scripts read them with any Python, before pooling is installed.
"""
import os

# Every kernel path against the pure-numpy twin (each forced strategy x dtype x rank x memory order),
# the index formats, channels-last, MaxUnpool, Col2Im, the gradient and the threads that run them.
# tests/test_simd.py runs them under each other build; tools/check_portable.sh under the build MSVC
# makes; tools/check_aarch64.sh with clang's aarch64 code.
KERNEL_TESTS = ["test_maxpool_values.py", "test_maxpool_nhwc.py", "test_maxunpool.py",
                "test_maxunpool_nhwc.py", "test_col2im.py", "test_threads.py", "test_maxpool_strategies.py",
                "test_twin.py", "test_index_format.py", "test_maxpool_grad.py"]

# With them, the tests that run the compiled code other ways: large inputs, hostile inputs, reused
# result blocks, fuzzing, processes and threads around the pool, the build's report and cache sizes,
# hand-worked cases.  tools/check_aarch64.sh runs these with gcc's aarch64 code.  The rest (argument
# errors, shapes and versions, memory growth, the docs, the packaging, the main job, the front ends)
# checks Python code and files whose results are the same on every machine, and the ONNX
# cross-checks hold pooling to onnxruntime on x86, where the kernels are held to the same twin as
# on aarch64.
NATIVE_TESTS = KERNEL_TESTS + ["test_maxpool_large.py", "test_hostile_inputs.py", "test_result_cache.py",
                               "test_fuzz.py", "test_processes.py", "test_concurrency.py", "test_config.py",
                               "test_tuning.py", "test_maxpool_hand.py"]

# What an installed wheel can change against the build the README's test command checks, whose
# kernels are compiled from the same sources by the same compiler with the same flags: the files
# installed and their metadata, the modules found and dispatched, the vendored OpenMP runtime
# (threads, processes, fork), the build's report, the documented usage.  tools/check_wheel.sh runs
# these against the repaired wheel, after python -m pooling (every operator against the twin).
INSTALL_TESTS = ["test_packaging.py", "test_main.py", "test_config.py", "test_tuning.py", "test_threads.py",
                 "test_processes.py", "test_readme.py", "test_docstrings.py", "test_onnx_integration.py"]

# tools/sanitize.sh runs the suite less the tests whose calls into the compiled code others make the
# same way through code the sanitizers do not instrument (dask's scheduler; the main job's
# subprocesses, where the script runs python -m pooling itself), that measure what the sanitizers
# change (a process's memory growth), or that read files and annotations only.
UNSANITIZED_TESTS = ["test_dask.py", "test_memory.py", "test_main.py", "test_packaging.py", "test_plot.py",
                     "test_docs_names.py", "test_docstrings.py", "test_framework_docs.py", "test_typing.py"]
SANITIZED_TESTS = sorted(name for name in os.listdir(os.path.dirname(os.path.abspath(__file__)))
                         if name.startswith("test_") and name.endswith(".py") and name not in UNSANITIZED_TESTS)

if __name__ == "__main__":
    import sys

    print(" ".join("tests/" + name for name in dict.fromkeys(globals()[sys.argv[1]] + ["test_simd.py"])))
