"""Dtype kinds and the zero-copy views the kernels take.

float16 and bfloat16 travel as uint16 bit patterns with an explicit kind (the
kernel cannot tell them from each other, or from a real uint16); bool travels
as uint8.  bfloat16 is ml_dtypes.bfloat16 or ONNX's legacy structured dtype
``np.dtype((np.uint16, {"bfloat16": (np.uint16, 0)}))``; ml_dtypes is optional.
"""
import functools
import reprlib
from typing import NamedTuple

import numpy as np

# The C element type of a kernel specialisation that holds each storage dtype: the name a launch
# indexes a fused kernel with (kernel[C_TYPES[storage]]), never leaving the choice to Cython's
# dispatch on the array, which cannot tell float16, bfloat16 and int16 apart in uint16 storage.
C_TYPES = {np.dtype(name): ctype for name, ctype in (
    ("int8", "int8_t"), ("uint8", "uint8_t"), ("int16", "int16_t"), ("int32", "int32_t"), ("int64", "int64_t"),
    ("uint16", "uint16_t"), ("uint32", "uint32_t"),
    ("uint64", "uint64_t"), ("float32", "float"), ("float64", "double"),
    ("complex64", "float complex"), ("complex128", "double complex"))}


class KindInfo(NamedTuple):
    """How the kernels see one dtype kind."""
    storage: np.dtype   # what the kernel's buffer holds (as_kernel_array's view)
    inf_bits: int       # +inf bit pattern of a 16-bit float format (include/pooling_half.h), else 0
    signed: np.dtype | None = None  # unsigned integers of 2-8 bytes: the signed type MaxPool runs them in

    @property
    def itemsize(self):
        return self.storage.itemsize

    @property
    def ctype(self):
        """The C element type of the MaxPool kernels' specialisation for this kind."""
        return C_TYPES[self.signed if self.signed is not None else self.storage]

    @property
    def key_bits(self):
        """What MaxPool's kernels take as inf_bits: a 16-bit float's +inf pattern, 1 for an unsigned
        integer run in the signed type (compared by its bits with the sign bit flipped:
        src/kernels/common.pxi), else 0."""
        return 1 if self.signed is not None else self.inf_bits


# The one table of dtype kinds.  float16 and bfloat16 share the uint16 kernels and differ only
# in inf_bits; MaxPool runs the integers of 2-8 bytes in the signed type of their width, the
# unsigned ones marked by key_bits.  (MaxUnpool moves bits through unsigned storage of each width,
# and Col2Im keeps integers in unsigned storage and bool in int8; their modules map kinds to those.)
KINDS = {
    "bool": KindInfo(np.dtype(np.uint8), 0),
    "int8": KindInfo(np.dtype(np.int8), 0),
    "int16": KindInfo(np.dtype(np.int16), 0),
    "int32": KindInfo(np.dtype(np.int32), 0),
    "int64": KindInfo(np.dtype(np.int64), 0),
    "uint8": KindInfo(np.dtype(np.uint8), 0),
    "uint16": KindInfo(np.dtype(np.uint16), 0, np.dtype(np.int16)),
    "uint32": KindInfo(np.dtype(np.uint32), 0, np.dtype(np.int32)),
    "uint64": KindInfo(np.dtype(np.uint64), 0, np.dtype(np.int64)),
    "float16": KindInfo(np.dtype(np.uint16), 0x7C00),
    "bfloat16": KindInfo(np.dtype(np.uint16), 0x7F80),
    "float32": KindInfo(np.dtype(np.float32), 0),
    "float64": KindInfo(np.dtype(np.float64), 0),
    "complex64": KindInfo(np.dtype(np.complex64), 0),
    "complex128": KindInfo(np.dtype(np.complex128), 0),
}

# The +inf bit pattern of each 16-bit float format: what the kernels need to order them.
HALF_INF_BITS = {kind: info.inf_bits for kind, info in KINDS.items() if info.inf_bits}

# Native numpy dtypes and their kinds (bfloat16 has none: see _kind).
_PLAIN = {np.dtype(np.bool_ if kind == "bool" else kind): kind for kind in KINDS if kind != "bfloat16"}

# Kinds whose kernel buffer holds another dtype than the array's own.
KERNEL_DTYPE = {kind: KINDS[kind].storage for kind in ("bool", "float16", "bfloat16")}


def dtype_kind(dtype):
    """The ONNX name of a dtype ('float32', 'bfloat16', ...), or None if unsupported."""
    return _kind(np.dtype(dtype))


# Bounded: callers may pass ever new dtypes (structured ones are endless), and
# a cache keyed on them must not grow the process without end.
_DTYPE_CACHE = 256


@functools.lru_cache(maxsize=_DTYPE_CACHE)
def _kind(dtype):
    if dtype.fields is not None:
        return "bfloat16" if _bfloat16_field(dtype) is not None else None
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        return "bfloat16"  # ml_dtypes.bfloat16
    return _PLAIN.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)


def _bfloat16_field(dtype):
    """The uint16 that holds the bits of a structured bfloat16 dtype, with its byte order, or None.

    A structured bfloat16 is ONNX's legacy dtype ``np.dtype((np.uint16, {"bfloat16": (np.uint16,
    0)}))`` in either byte order, or the record ``[("bfloat16", "<u2" or ">u2")]``: two bytes, one
    field named bfloat16, an unsigned 16-bit integer at offset 0 (whose byte order is the data's;
    a legacy dtype's own must agree with it).  Any other dtype with such a field is a lookalike.
    """
    if dtype.itemsize != 2 or dtype.names != ("bfloat16",):
        return None
    field, offset = dtype.fields["bfloat16"][:2]
    if offset != 0 or field.kind != "u" or field.itemsize != 2:
        return None
    # (numpy writes a native byte order as "=", and a legacy dtype's isnative is its field's.)
    if dtype.kind != "V" and (dtype.kind != "u" or (dtype.byteorder == "=") != field.isnative):
        return None
    return field


# Native dtypes whose arrays the kernels read as they are, and their kinds; and the 16-bit floats
# (float16, ml_dtypes' bfloat16), which they read as their bits.
_AS_IS = {dtype: kind for dtype, kind in _PLAIN.items() if kind not in KERNEL_DTYPE}
_AS_BITS = {dtype: kind for dtype, kind in _PLAIN.items() if kind in ("float16", "bfloat16")}

LEGACY_BFLOAT16 = np.dtype((np.uint16, {"bfloat16": (np.uint16, 0)}))
_BOOL = np.dtype(np.bool_)


class Kinds(tuple):
    """The dtype kinds one operator version allows (a tuple of names), which also knows where the
    others are allowed: `since` maps a kind to the first version that has it, `library` lists the
    kinds of library mode.  Its dtype errors name that opset or mode."""
    since: dict
    library: tuple

    def __new__(cls, kinds, since, library):
        self = super().__new__(cls, kinds)
        self.since, self.library = since, library
        return self

    def hint(self, kind):
        """Where an unsupported `kind` is allowed, as the end of a message ('' where nowhere)."""
        if kind in self.since:
            return f"; {kind} needs opset >= {self.since[kind]} (or library mode, opset=None)"
        if kind in self.library:
            return f"; {kind} is allowed in library mode only (opset=None)"
        return ""


def checked_kind(op, name, dtype, kinds):
    """The kind of `dtype`; a TypeError naming op, parameter and dtype unless it is in `kinds` (a
    tuple, or a Kinds, whose message also says which opset or mode allows the dtype)."""
    kind = _kind(dtype)
    if kind not in kinds:
        raise TypeError(
            f"{op}: {name} has dtype {dtype}, which is not supported; "
            f"supported: {', '.join(kinds)}"
            + (kinds.hint(kind) if isinstance(kinds, Kinds) else "")
            + ("" if dtype.fields is None or kind is not None else
               " (a structured bfloat16 has one field, 'bfloat16', an unsigned 16-bit integer: ONNX's "
               "legacy dtype in either byte order, or that one-field record)")
        )
    return kind


def as_array(op, name, x):
    """`x` (not an ndarray: callers pass those on as they are) as an array of numbers of rank >= 1.

    An object with ``__dlpack__`` (a torch CPU tensor, a JAX CPU array, ...) is read through DLPack
    as a view of its memory, without a copy (numpy subclasses keep numpy's own path).  None, a
    string, a scalar, or anything else numpy makes a 0-d or non-numeric array of, is a TypeError
    naming op and parameter (not an error about its rank or shape); so is a DLPack object numpy
    cannot view: one on another device than the CPU, a dtype numpy lacks (bfloat16), a torch tensor
    that requires grad (detach it, or use pooling.torch, which keeps the graph).
    """
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        arr = _from_dlpack(op, name, x)
    else:
        try:
            arr = np.asarray(x)
        except ValueError as e:  # nested sequences of different lengths
            raise TypeError(f"{op}: {name} must be an array of numbers, got {_short(x)}: {e}") from None
    if arr.ndim == 0:
        raise TypeError(f"{op}: {name} must be an array of numbers, got {_short(x)}")
    if arr.dtype.kind not in "biufcV":
        raise TypeError(f"{op}: {name} has dtype {arr.dtype}: it must be an array of numbers, got {_short(x)}")
    return arr


# DLPack device types whose memory the CPU reads: kDLCPU, kDLCUDAHost (pinned), kDLROCMHost.
_HOST_DEVICES = (1, 3, 11)


def _from_dlpack(op, name, x):
    """A numpy view of the memory of a DLPack object `x` (never a copy), or a TypeError naming op and name."""
    try:
        device = int(x.__dlpack_device__()[0])
    except Exception:  # no device query: let from_dlpack decide
        device = None
    if device is not None and device not in _HOST_DEVICES:
        raise TypeError(
            f"{op}: {name} is on DLPack device type {device}, not in CPU memory: pooling reads CPU "
            f"memory only; move it first (a torch tensor: .cpu()), got {_short(x)}"
        )
    is_neg = getattr(x, "is_neg", None)  # a torch tensor with its lazy negation bit set: DLPack
    if callable(is_neg) and is_neg():     # would export the stored values without the negation
        x = x.resolve_neg()
    try:
        # No copy= argument: numpy never copies CPU memory, and producers of DLPack before 1.0
        # (torch < 2.3) cannot be asked for copy=False.
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise TypeError(
            f"{op}: {name} cannot be read through DLPack as a numpy array ({e}); "
            f"got {_short(x)}"
        ) from None


def _short(value):
    """A value for a message: a short repr and its type."""
    return f"{reprlib.repr(value)} ({type(value).__name__})"


def as_kernel_array(op, name, x, kinds):
    """(array, kind): `x` as a native-order C-contiguous array the kernels can read.

    Raises TypeError naming op, parameter and dtype when the kind is not in
    `kinds`.  The caller's array is never written (the kernels never write their
    inputs): it is handed back as it is, or as a view of its bits (16-bit floats),
    and a copy, read-only, is made when layout, alignment or byte order must change.
    """
    arr = x if type(x) is np.ndarray else np.asarray(x)
    kind = _AS_IS.get(arr.dtype)
    if kind in kinds:
        flags = arr.flags
        if flags.c_contiguous and flags.aligned:
            return arr, kind  # the common case: nothing to convert (kernels never write inputs)
    elif arr.dtype is _BOOL and "bool" in kinds and arr.flags.c_contiguous:
        return arr, "bool"  # (a mask: the kernels read its bytes, by their item size; no view to make)
    elif _AS_BITS.get(arr.dtype) in kinds:
        flags = arr.flags
        if flags.c_contiguous and flags.aligned:  # one view, as the copy below ends
            return arr.view(KERNEL_DTYPE[_AS_BITS[arr.dtype]]), _AS_BITS[arr.dtype]
    kind = checked_kind(op, name, arr.dtype, kinds)
    storage = _bfloat16_field(arr.dtype) if arr.dtype.fields is not None else arr.dtype
    if storage.byteorder not in "=|":
        # Byte-swapped (a structured bfloat16's field says so): swap to native order.
        arr = arr.view(storage).astype(storage.newbyteorder("="))
    # Aligned too: the kernels load whole elements, and a misaligned load is undefined
    # behaviour in C (a fault on strict-alignment CPUs).  ascontiguousarray keeps a
    # misaligned contiguous array as it is; a copy is aligned.
    arr = np.ascontiguousarray(arr) if arr.flags.aligned else arr.copy()
    view = arr.view(KERNEL_DTYPE.get(kind, storage.newbyteorder("=")))
    view.flags.writeable = False
    return view, kind


@functools.lru_cache(maxsize=_DTYPE_CACHE)
def result_dtype(x_dtype):
    """The dtype results are returned in: the input's own, in native byte order."""
    dtype = np.dtype(x_dtype)
    if dtype.fields is not None:
        return LEGACY_BFLOAT16
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def float_to_half_bits(value, kind):
    """The uint16 bits of `value` rounded to nearest-even in float16 or bfloat16.

    bfloat16 rounds from the float32 nearest to `value` (exact for every value
    that is already a float32, which covers the bounds callers use in practice).
    """
    with np.errstate(over="ignore"):
        if kind == "float16":
            return int(np.array(value, dtype=np.float16).view(np.uint16))
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    if (bits & 0x7FFFFFFF) > 0x7F800000:  # NaN: keep it quiet, keep the sign
        return (bits >> 16) | 0x0040
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
