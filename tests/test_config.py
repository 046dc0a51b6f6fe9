"""show_config(), openmp_enabled(), max_threads(), __version__ (API.md)."""
import io
import re
from importlib import metadata

import pooling


def test_version():
    assert isinstance(pooling.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)*", pooling.__version__), pooling.__version__
    try:
        installed = metadata.version("pooling-kernels")
    except metadata.PackageNotFoundError:  # run from a source tree
        return
    assert installed == pooling.__version__


def test_openmp_enabled_and_max_threads():
    assert isinstance(pooling.openmp_enabled(), bool)
    m = pooling.max_threads()
    assert type(m) is int and m >= 1
    if not pooling.openmp_enabled():
        assert m == 1


def test_show_config_prints_version_and_openmp(capsys):
    assert pooling.show_config() is None
    out = capsys.readouterr().out
    assert pooling.__version__ in out
    assert "openmp" in out.lower()
    assert str(pooling.max_threads()) in out
    line = next(line for line in out.splitlines() if "openmp" in line.lower())
    assert ("yes" in line.lower()) == pooling.openmp_enabled(), line


def test_show_config_to_a_file():
    buf = io.StringIO()
    pooling.show_config(file=buf)
    assert pooling.__version__ in buf.getvalue()


def test_public_names():
    for name in ("max_pool", "max_pool_output_shape", "show_config", "openmp_enabled", "max_threads",
                 "__version__"):
        assert hasattr(pooling, name)
        assert name in pooling.__all__
    assert callable(pooling.max_pool) and pooling.max_pool.__doc__


def test_show_config_names_the_architecture_and_the_vector_code(capsys):
    import platform

    from pooling import _dispatch
    pooling.show_config()
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert platform.machine() in lines["python"]
    assert lines["compiler"].split()[1] in ("gcc", "clang", "msvc", "unknown")
    width = _dispatch.core.build_info()["vector_bytes"]
    assert width in (0, 16, 32, 64)
    vector = lines["vector"]
    assert (f"{width * 8}-bit vectors" in vector) if width else ("one value at a time" in vector)
    if _dispatch.level == "avx2":
        assert width == 32
    # the settings this CPU takes instead of the defaults, each named
    from pooling import _runtime, _tuning
    taken = [r for r in _tuning.SETTINGS if _runtime.cpu_id() in r.cpus and _dispatch.level in r.levels]
    assert all(r.setting in lines["cpu"] and r.cpus.name in lines["cpu"] for r in taken)
    assert taken or "the defaults" in lines["cpu"]
