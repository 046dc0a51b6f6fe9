"""This CPU's cache sizes, read once at import: the terms every cache-dependent speed decision is
written in (pooling._tuning), so that a threshold measured on one machine scales to another.

Sources, first answer per size wins (docs/tuning.md, "Cache sizes"):

1. ``POOLING_CACHES``, e.g. ``"l1d=48K,l2=2M,llc=32M"`` (any of the three; K, M, G suffixes): for
   machines that misreport, as virtual machines often do;
2. Linux's /sys/devices/system/cpu/cpu0/cache (every architecture);
3. macOS's ``hw.l1dcachesize``, ``hw.l2cachesize``, ``hw.l3cachesize`` (sysctl);
4. CPUID's cache leaves on x86 (4 on Intel, 0x8000001D on AMD), with GCC, clang or MSVC: Windows;
5. glibc's ``sysconf(_SC_LEVEL1_DCACHE_SIZE)`` and its kin;
6. the sizes of the machines most thresholds were first measured on (`DEFAULT`).

``llc`` is the last level the CPU reports (L3, or L2 where there is none), whole, as reported:
a VM may report its host's cache, which ``POOLING_CACHES`` corrects.
"""
import ctypes
import ctypes.util
import os
import re
import sys
from typing import NamedTuple

from . import _runtime


class Caches(NamedTuple):
    l1d: int          # bytes of level-1 data cache per core
    l2: int           # bytes of level-2 cache per core
    llc: int          # bytes of the last-level cache, whole
    llc_cpus: int     # logical CPUs sharing it (0: not reported)
    source: str       # where the sizes came from, e.g. "sysfs" or "POOLING_CACHES (llc), sysfs"


# The caches of the development VM that set most thresholds (docs/tuning.md#cpus-measured):
# 32 KiB L1d, 512 KiB L2 per core, a 32 MiB L3.
DEFAULT = Caches(32 << 10, 512 << 10, 32 << 20, 0, "default")
FIELDS = ("l1d", "l2", "llc")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    """Bytes of a size such as "32K", "1M", "1024" (sysfs, POOLING_CACHES); None if unreadable."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    return int(m.group(1)) * _UNITS[m.group(2).upper()] if m else None


def from_env(text):
    """{field: bytes} of a POOLING_CACHES value; ImportError naming the variable if malformed."""
    sizes = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        size = parse_size(value)
        if name.strip().lower() not in FIELDS or not size:
            raise ImportError(f"pooling: POOLING_CACHES must be entries such as 'l1d=48K,l2=2M,llc=32M' "
                              f"(fields {', '.join(FIELDS)}; sizes above 0 with K, M or G), got {text!r}")
        sizes[name.strip().lower()] = size
    return sizes


def _cpu_count(cpu_list):
    """Logical CPUs in a sysfs list such as "0-3,8-11"."""
    count = 0
    for part in filter(None, cpu_list.strip().split(",")):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


def from_sysfs(root="/sys/devices/system/cpu/cpu0/cache"):
    """({field: bytes}, llc_cpus) from Linux's cache directories; ({}, 0) where absent."""
    levels = {}
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return {}, 0
    for name in names:
        if not name.startswith("index"):
            continue
        path = os.path.join(root, name)
        try:
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(path, "level")) as f:
                level = int(f.read())
            with open(os.path.join(path, "size")) as f:
                size = parse_size(f.read())
            try:
                with open(os.path.join(path, "shared_cpu_list")) as f:
                    cpus = _cpu_count(f.read())
            except (OSError, ValueError):
                cpus = 0
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size:
            levels[level] = (size, cpus)
    return _from_levels(levels)


def _from_levels(levels):
    """({field: bytes}, llc_cpus) from {level: (bytes, sharing CPUs)} of the data caches."""
    sizes = {}
    if 1 in levels:
        sizes["l1d"] = levels[1][0]
    if 2 in levels:
        sizes["l2"] = levels[2][0]
    last = max((lv for lv in levels if lv >= 2), default=None)
    if last is None:
        return sizes, 0
    sizes["llc"] = levels[last][0]
    return sizes, levels[last][1]


def from_sysctl():
    """({field: bytes}, 0) from macOS's hw.*cachesize; ({}, 0) elsewhere."""
    if sys.platform != "darwin":
        return {}, 0
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return {}, 0
    sysctlbyname = libc.sysctlbyname
    sysctlbyname.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p,
                             ctypes.c_size_t)
    sysctlbyname.restype = ctypes.c_int
    levels = {}
    for level, name in ((1, b"hw.l1dcachesize"), (2, b"hw.l2cachesize"), (3, b"hw.l3cachesize")):
        value = ctypes.c_int64(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if sysctlbyname(name, ctypes.byref(value), ctypes.byref(size), None, 0) == 0 and value.value > 0:
            levels[level] = (value.value, 0)
    return _from_levels(levels)


def from_cpuid():
    """({field: bytes}, llc_cpus) from CPUID's cache leaves (x86); ({}, 0) elsewhere."""
    found = _runtime.cpuid_caches()
    if found is None:
        return {}, 0
    sizes, cpus = found
    return _from_levels({level + 1: (sizes[level], cpus[level]) for level in range(3) if sizes[level] > 0})


def from_sysconf():
    """({field: bytes}, 0) from glibc's sysconf; ({}, 0) where it has no such names."""
    levels = {}
    if not hasattr(os, "sysconf"):  # Windows
        return {}, 0
    for level, name in ((1, "SC_LEVEL1_DCACHE_SIZE"), (2, "SC_LEVEL2_CACHE_SIZE"), (3, "SC_LEVEL3_CACHE_SIZE")):
        try:
            value = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if value > 0:
            levels[level] = (value, 0)
    return _from_levels(levels)


def detect(env=None, sources=None):
    """The Caches of this machine: POOLING_CACHES (`env`), then each of `sources` (name, reader)
    in turn for the sizes still unknown, then DEFAULT."""
    if sources is None:
        sources = (("sysfs", from_sysfs), ("sysctl", from_sysctl), ("cpuid", from_cpuid),
                   ("sysconf", from_sysconf))
    sizes = from_env(env) if env else {}
    said = [f"POOLING_CACHES ({', '.join(f for f in FIELDS if f in sizes)})"] if sizes else []
    llc_cpus = 0
    for name, reader in sources:
        if all(f in sizes for f in FIELDS):
            break
        found, cpus = reader()
        new = {f: v for f, v in found.items() if f not in sizes}
        if new:
            sizes.update(new)
            said.append(name)
            if "llc" in new:
                llc_cpus = cpus
    missing = [f for f in FIELDS if f not in sizes]
    if missing:
        said.append(f"default ({', '.join(missing)})")
    values = {f: sizes.get(f, getattr(DEFAULT, f)) for f in FIELDS}
    # A reported level-2 cache larger than the last level (or no level 2) is read as the last one.
    values["l2"] = min(values["l2"], values["llc"])
    return Caches(values["l1d"], values["l2"], values["llc"], llc_cpus, ", ".join(said))


def _size(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10} KiB"


def describe(caches=None):
    """One line for show_config: the sizes in use and where they came from."""
    c = caches or CACHES
    shared = f" shared by {c.llc_cpus} CPUs" if c.llc_cpus else ""
    return f"L1d {_size(c.l1d)}, L2 {_size(c.l2)} per core, last level {_size(c.llc)}{shared} ({c.source})"


CACHES = detect(os.environ.get("POOLING_CACHES", "").strip())
