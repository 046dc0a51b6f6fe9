"""Every speed decision that depends on the machine, in one place: thresholds written in this
machine's cache sizes (pooling._caches), the typed table of CPUs on which a kernel runs from
another SIMD build than the process's, and the typed table of CPUs on which a kernel's setting
differs from its default.

Each threshold and rule says why in a line and links its section of docs/tuning.md, which holds
the measurements: CPU, command, figures.  What a strategy *can* compute (its scratch limits) is
not here: it is the same on every machine, so a forced strategy behaves the same everywhere.
"""
from dataclasses import dataclass

from . import _caches, _dispatch, _runtime
from ._strategy import Strategy

DOCS = "docs/tuning.md"


# Thresholds, in cache terms.  Read at each plan (plans are cached), so that tests can patch
# _caches.CACHES on both sides of a boundary.

def buffer_bytes():
    """Bytes of input rows FUSED and TILES reduce per chunk: a quarter of L1d, so a chunk is still
    in L1 when the second pass reads it back (#row-chunks-fused-and-tiles)."""
    return _caches.CACHES.l1d // 4


def rows_chosen():
    """The longest row ROWS_FIRST is chosen for: its float32 row buffers within half of L1d
    (#rows_first-row-length)."""
    return _caches.CACHES.l1d // 8


def planes_chosen():
    """PLANES is chosen while its scratch per thread fits one core's L2 (#planes-scratch)."""
    return _caches.CACHES.l2


def even_split(input_bytes, nt):
    """Whether a MaxPool input is split into the fewest even work items, each thread taking the
    same part on every call: while each thread's part stays within half of its core's L2
    (#even-work-split)."""
    return input_bytes * 2 <= _caches.CACHES.l2 * max(nt, 1)


def col2im_item_bytes():
    """Bytes of output (or float32 sums) a work item of Col2Im's scatter covers at most: it is
    revisited once per kernel offset, so it stays within half of one core's L2 (#col2im-work-items)."""
    return _caches.CACHES.l2 // 2


def col2im_prefetch(plane_bytes):
    """Whether Col2Im's gather prefetches the next plane's columns while it sums one: planes of at
    most a quarter of L2, so that the next one is still there when its turn comes.  Whatever the
    input's size: in cache the prefetches cost 0-6%, and inputs of a quarter of the last-level
    cache already came from memory on a VM whose L3 other tenants share (#col2im-gather)."""
    return plane_bytes * 4 <= _caches.CACHES.l2


def col2im_group_bytes(call_bytes):
    """Bytes of columns and image a work item of Col2Im's register rows covers, in planes taken
    together (a 2-D grid's rows found once for all of them, side by side): one core's L1d, so that
    a row's sources in every plane of the group stay there for its steps.  0 (one plane an item)
    for calls past a quarter of the last-level cache: from memory, a few planes' rows read side by
    side ran slower than one plane's (#col2im-plane-groups)."""
    return _caches.CACHES.l1d if call_bytes * 4 <= _caches.CACHES.llc else 0


def prefetch_rows(input_bytes):
    """Whether ROWS_FIRST prefetches the next plane: inputs of at least 3/8 of the last-level
    cache, which come from memory; below, in cache, prefetches only cost issue slots
    (#prefetching-rows_first-and-nhwc_blocks)."""
    return input_bytes * 8 >= _caches.CACHES.llc * 3


def prefetch_nhwc(input_bytes, h_stride):
    """Whether NHWC_BLOCKS prefetches the next output row's input: inputs of at least 7/32 of
    the last-level cache per row of H stride (#prefetching-rows_first-and-nhwc_blocks)."""
    return input_bytes * 32 >= _caches.CACHES.llc * 7 * h_stride


def stream_unpool(touched_bytes):
    """Whether MaxUnpool writes its windows with non-temporal stores: where the bytes the call
    reads and writes pass half the last-level cache, which the result then shares with its input
    and whatever else runs (#maxunpool-non-temporal-stores)."""
    return touched_bytes * 2 > _caches.CACHES.llc


# Per-CPU build rules.

@dataclass(frozen=True)
class Cpus:
    """A named range of CPU models, as CPUID numbers them."""
    name: str
    vendor: str
    family: int
    models: tuple  # of ranges

    def __contains__(self, cpu):
        vendor, family, model = cpu
        return vendor == self.vendor and family == self.family and any(model in r for r in self.models)


@dataclass(frozen=True)
class BuildRule:
    """On `cpus`, `strategy` without Indices (with them where `indices`), for these W strides and
    item sizes, on inputs of at least `least_llc` last-level caches, runs from `build` ("baseline"
    or "avx512") where the process runs the AVX2 build by its own choice; measured there
    (`evidence`, in DOCS)."""
    strategy: Strategy
    build: str
    cpus: Cpus
    w_strides: tuple
    itemsizes: tuple
    evidence: str
    least_llc: float = 0.0
    indices: bool = False

    def applies(self, strategy, w_stride, itemsize, input_bytes, with_indices=False):
        return (strategy is self.strategy and w_stride in self.w_strides and itemsize in self.itemsizes
                and with_indices == self.indices and input_bytes >= self.least_llc * _caches.CACHES.llc)


ZEN4 = Cpus("AMD Zen 4 server (EPYC 9004)", "AuthenticAMD", 0x19, (range(0x10, 0x20),))
ZEN5 = Cpus("AMD Zen 5 server (EPYC 9005)", "AuthenticAMD", 0x1A, (range(0x00, 0x20),))
INTEL_0XCF = Cpus("Intel family 6 model 0xCF (fifth-generation server parts)", "GenuineIntel", 6, (range(0xCF, 0xD0),))
# (0xA7 is also Rocket Lake's number on bare metal, where nothing was measured:
# #xeon-0xa7-nhwc-with-indices-from-the-avx-512-build)
INTEL_0XA7 = Cpus("Intel family 6 model 0xA7 (as a KVM guest with AVX512-FP16 reports it)", "GenuineIntel", 6,
                  (range(0xA7, 0xA8),))

# (Zen 3's rules, FUSED and TILES with a W stride of 2 from the baseline build, were dropped when
# measured again: #zen-3-fused-and-tiles-with-w-stride-2.  Zen 5's TILES float32 from memory was
# dropped when the kernel it measured stopped serving its cases: #zen-5-tiles-float32-from-memory-dropped.)
RULES = (
    BuildRule(Strategy.FUSED, "baseline", ZEN5, (2,), (1,), "#zen-5-fused-uint8-with-w-stride-2"),
    BuildRule(Strategy.PLANES, "avx512", ZEN5, (1,), (4,), "#zen-5-avx-512-kernels"),
    BuildRule(Strategy.NARROW, "avx512", ZEN5, (1,), (4,), "#zen-5-avx-512-kernels"),
    BuildRule(Strategy.NHWC_BLOCKS, "avx512", ZEN5, (1, 2), (4,), "#zen-5-avx-512-kernels"),
    BuildRule(Strategy.NHWC, "avx512", ZEN4, (1, 2), (4,), "#zen-4-nhwc-with-indices-from-the-avx-512-build",
              indices=True),
    BuildRule(Strategy.NHWC, "avx512", INTEL_0XCF, (1, 2), (4,),
              "#xeon-0xcf-nhwc-with-indices-from-the-avx-512-build", indices=True),
    BuildRule(Strategy.NARROW, "avx512", INTEL_0XCF, (1,), (4,), "#xeon-0xcf-narrow-from-the-avx-512-build"),
    BuildRule(Strategy.NHWC, "avx512", INTEL_0XA7, (1, 2), (4,),
              "#xeon-0xa7-nhwc-with-indices-from-the-avx-512-build", indices=True),
    BuildRule(Strategy.NARROW, "avx512", INTEL_0XA7, (1,), (4,), "#xeon-0xa7-narrow-from-the-avx-512-build"),
)


def active_rules(cpu, level, wanted, available, rules=RULES):
    """The rules in force: those naming this CPU, where the AVX2 build was chosen automatically
    (POOLING_SIMD=avx2 runs every kernel in AVX2) and the rule's build can run here."""
    if level != "avx2" or wanted != "auto":
        return ()
    return tuple(r for r in rules if cpu in r.cpus and (r.build == "baseline" or r.build in available))


ACTIVE = active_rules(_runtime.cpu_id(), _dispatch.level, _dispatch.wanted, _dispatch.available)


# Per-CPU kernel settings: in every build, where a setting measured faster off (or on) than its
# default on a CPU.

@dataclass(frozen=True)
class SettingRule:
    """On `cpus`, in the builds `levels` ("baseline", "avx2", "avx512": the process's build), the kernel
    setting `setting` (the name of its function below) is `value` instead of its default; measured
    there (`evidence`, in DOCS)."""
    setting: str
    value: bool
    cpus: Cpus
    levels: tuple
    evidence: str


_RUNS = "#zen-4-and-zen-5-col2im-runs-without-the-prefetch"
SETTINGS = (
    SettingRule("col2im_run_prefetch", False, ZEN4, ("avx2",), _RUNS),
    SettingRule("col2im_run_prefetch", False, ZEN5, ("avx2",), _RUNS),
)


def active_settings(cpu=None, level=None, rules=SETTINGS):
    """The rules of SETTINGS in force for `cpu` and the build `level` (this process's by default)."""
    cpu = _runtime.cpu_id() if cpu is None else cpu
    level = _dispatch.level if level is None else level
    return tuple(r for r in rules if cpu in r.cpus and level in r.levels)


def setting(name, default, cpu=None, level=None):
    """Setting `name` for `cpu` and build `level` (this process's by default): the value of the
    first rule in force naming it, else `default`."""
    return next((r.value for r in active_settings(cpu, level) if r.setting == name), default)


def col2im_run_prefetch(cpu=None, level=None):
    """Whether Col2Im's scatter (a last axis of stride 1) asks for its float32 columns 1 KB ahead of
    the adds (#col2im-runs): yes, but where SETTINGS says otherwise."""
    return setting("col2im_run_prefetch", True, cpu, level)


def kernels_for(strategy, w_stride, itemsize, with_indices=False, input_bytes=0):
    """The compiled build to run `strategy` (a Strategy) with, for a W stride, element size,
    Indices or not and the input's bytes: the process's build, or another where a rule in force
    says so."""
    for rule in ACTIVE:
        if rule.applies(strategy, w_stride, itemsize, input_bytes, with_indices):
            return _dispatch.load(rule.build)
    return _dispatch.core
