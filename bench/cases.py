"""The benchmark cases: one comparison group per (operator, shape, dtype, attributes).

Each implementation of a case is built by `implementations(case)`: pooling (all
threads, one thread, and with preallocated `out=` buffers), onnxruntime, torch
and OpenVINO where installed, and `floor`, a numpy copy that moves exactly the
bytes the operation must read and write (this machine's memory floor, measured
in the same run).  Every implementation returns its result so the benchmark
can check it.
"""
import functools
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

import pooling
from pooling import reference

THREADS = 2  # peers and pooling run with the same thread count


@dataclass(frozen=True)
class Case:
    op: str                       # "MaxPool", "MaxUnpool" or "Col2Im"
    shape: tuple                  # the main input's shape
    dtype: str
    attrs: tuple = ()             # (name, value) pairs of ONNX attributes
    indices: bool = False         # MaxPool: also return Indices
    layout: str = "NCHW"
    extra: tuple = field(default=(), compare=True)  # op-specific (Col2Im: image_shape, block_shape)

    @property
    def id(self):
        attrs = " ".join(f"{k}={_short(v)}" for k, v in self.attrs)
        parts = [self.op, "x".join(map(str, self.shape)), self.dtype, attrs]
        if self.indices:
            parts.append("+Indices")
        if self.layout != "NCHW":
            parts.append(self.layout)
        return " ".join(p for p in parts if p)

    @property
    def kwargs(self):
        return dict(self.attrs)


def _short(v):
    return ",".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


def _pool(shape, dtype="float32", k=3, s=2, p=1, indices=False, layout="NCHW"):
    n = len(shape) - 2
    attrs = (("kernel_shape", (k,) * n), ("strides", (s,) * n))
    if p:
        attrs += (("pads", (p,) * (2 * n)),)
    return Case("MaxPool", shape, dtype, attrs, indices, layout)


CASES = [
    # float32 without Indices: ResNet-like shapes, 1-D and 3-D.
    _pool((8, 64, 112, 112)),
    _pool((8, 64, 112, 112), k=2, s=2, p=0),
    _pool((8, 64, 112, 112), k=3, s=1, p=1),
    _pool((1, 3, 224, 224)),
    _pool((16, 64, 16384)),
    _pool((2, 32, 32, 56, 56)),
    # with Indices
    _pool((8, 64, 112, 112), indices=True),
    _pool((8, 64, 112, 112), "uint8", indices=True),
    # the dtypes where peers are slowest
    _pool((8, 64, 112, 112), "float16"),
    _pool((8, 64, 112, 112), "bfloat16"),
    _pool((8, 64, 112, 112), "float64"),
    _pool((8, 64, 112, 112), "int8"),
    _pool((8, 64, 112, 112), "uint8"),
    # channels-last (against torch channels_last on the same data)
    _pool((8, 112, 112, 64), layout="NHWC"),
    # call overhead
    _pool((1, 1, 8, 8), k=2, s=2, p=0),
]


@functools.lru_cache(maxsize=None)
def inputs(case):
    """The case's input arrays (deterministic), as a tuple."""
    rng = np.random.default_rng(0)
    if case.dtype in ("int8", "uint8"):
        info = np.iinfo(case.dtype)
        x = rng.integers(info.min, int(info.max) + 1, size=case.shape, dtype=case.dtype)
    else:
        x = rng.standard_normal(case.shape, dtype=np.float32)
        x = x.astype(_numpy_dtype(case.dtype))
    return (x,)


def _numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def call_pooling(case, n_threads=None, out=None):
    (x,) = inputs(case)
    return pooling.max_pool(x, **case.kwargs, return_indices=case.indices, layout=case.layout,
                            n_threads=n_threads, **(out or {}))


@functools.lru_cache(maxsize=None)
def expected(case):
    """The reference result (checked once against pooling.reference)."""
    (x,) = inputs(case)
    got = call_pooling(case, n_threads=1)
    xr = x if case.layout == "NCHW" else np.moveaxis(x, -1, 1)
    y, i = reference.max_pool(xr, **_reference_kwargs(case))
    if case.layout == "NHWC":
        y = np.ascontiguousarray(np.moveaxis(y, 1, -1))
    want = (y, i) if case.indices else y
    if case.indices and case.layout == "NCHW":
        assert got[0].tobytes() == y.tobytes() and np.array_equal(got[1], i)
    elif not case.indices:
        assert got.tobytes() == y.tobytes()
    return want if case.layout == "NCHW" else got


def _reference_kwargs(case):
    kw = dict(case.kwargs)
    n = len(kw["kernel_shape"])
    kw.setdefault("strides", (1,) * n)
    kw.setdefault("pads", (0,) * (2 * n))
    return kw


def moved_bytes(case):
    """Bytes the operation must read and write at the least."""
    (x,) = inputs(case)
    out = pooling.max_pool_output_shape(x.shape, **case.kwargs, layout=case.layout)
    size = int(np.prod(out))
    return x.nbytes + size * x.itemsize + (size * 8 if case.indices else 0)


# ---------------------------------------------------------------------------
# Implementations
# ---------------------------------------------------------------------------

class Unavailable(Exception):
    """This implementation cannot run this case here (peer not installed or no support)."""


def implementations(case):
    """name -> factory; a factory returns a zero-argument callable (or raises Unavailable)."""
    return {
        "pooling": lambda: functools.partial(call_pooling, case),
        "pooling 1 thread": lambda: functools.partial(call_pooling, case, 1),
        "pooling out=": lambda: _pooling_out(case),
        "onnxruntime": lambda: _onnxruntime(case),
        "torch": lambda: _torch(case),
        "openvino": lambda: _openvino(case),
        "floor": lambda: _floor(case),
    }


def _pooling_out(case):
    want = expected(case)
    y, i = want if case.indices else (want, None)
    out = {"out": np.empty_like(y)}
    if case.indices:
        out["indices_out"] = np.empty_like(i)
    return functools.partial(call_pooling, case, None, out)


def _floor(case):
    half = moved_bytes(case) // 2
    src = np.ones(half, dtype=np.uint8)
    dst = np.zeros(half, dtype=np.uint8)
    return functools.partial(np.copyto, dst, src)


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "float16": 10, "float64": 11, "bfloat16": 16}


def onnx_model(case):
    """A single-node ONNX model of the case (bytes)."""
    try:
        from onnx import TensorProto, helper
    except ImportError as e:
        raise Unavailable("onnx is not installed") from e
    if case.layout != "NCHW":
        raise Unavailable("no NHWC MaxPool in the default ONNX domain")
    (x,) = inputs(case)
    elem = _ONNX_TYPES[case.dtype]
    outputs = ["Y", "I"] if case.indices else ["Y"]
    node = helper.make_node("MaxPool", ["X"], outputs, **{k: list(v) for k, v in case.attrs})
    graph = helper.make_graph(
        [node], "bench", [helper.make_tensor_value_info("X", elem, x.shape)],
        [helper.make_tensor_value_info(o, elem if o == "Y" else TensorProto.INT64, None) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    return model.SerializeToString()


def _onnxruntime(case):
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise Unavailable("onnxruntime is not installed") from e
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    try:
        session = ort.InferenceSession(onnx_model(case), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. a dtype it has no kernel for
        raise Unavailable(f"onnxruntime: {str(e).splitlines()[0][:80]}") from e
    (x,) = inputs(case)
    feed = {"X": x}
    return lambda: tuple(session.run(None, feed)) if case.indices else session.run(None, feed)[0]


def _torch(case):
    try:
        import torch
    except ImportError as e:
        raise Unavailable("torch is not installed") from e
    if case.dtype == "bfloat16":
        import ml_dtypes  # noqa: F401  (the input is an ml_dtypes array)
    torch.set_num_threads(THREADS)
    (x,) = inputs(case)
    n = len(case.kwargs["kernel_shape"])
    if n > 3:
        raise Unavailable("torch pools at most 3 spatial axes")
    kw = case.kwargs
    pads = kw.get("pads", (0,) * (2 * n))
    if any(pads[i] != pads[i + n] for i in range(n)):
        raise Unavailable("torch has symmetric pads only")
    if case.dtype == "bfloat16":
        t = torch.from_numpy(x.view(np.uint16).astype(np.int32) << 16).view(torch.float32).to(torch.bfloat16)
    elif case.dtype in ("int8", "uint8") and case.indices:
        raise Unavailable("torch max_pool has no integer Indices kernel")
    else:
        t = torch.from_numpy(x)
    if case.layout == "NHWC":
        t = t.permute(0, 3, 1, 2)  # NCHW view of channels_last memory
    pool = getattr(torch.nn.functional, f"max_pool{n}d")
    args = dict(kernel_size=kw["kernel_shape"], stride=kw.get("strides", 1), padding=pads[:n],
                return_indices=case.indices)
    try:
        pool(t, **args)
    except RuntimeError as e:
        raise Unavailable(f"torch: {str(e).splitlines()[0][:80]}") from e

    def run():
        with torch.no_grad():
            r = pool(t, **args)
        return r
    return run


def _openvino(case):
    try:
        import openvino as ov
    except ImportError as e:
        raise Unavailable("openvino is not installed") from e
    model = onnx_model(case)
    path = os.path.join(tempfile.mkdtemp(prefix="pooling-bench-"), "model.onnx")
    with open(path, "wb") as f:
        f.write(model)
    try:
        compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": THREADS})
    except Exception as e:
        raise Unavailable(f"openvino: {str(e).splitlines()[0][:80]}") from e
    request = compiled.create_infer_request()
    (x,) = inputs(case)
    if case.dtype == "bfloat16":
        raise Unavailable("openvino takes no bfloat16 numpy input")

    def run():
        r = request.infer({0: x})
        return tuple(r.values()) if case.indices else next(iter(r.values()))
    return run


def to_numpy(case, name, result):
    """A peer's result as numpy arrays comparable with pooling's (Indices as global int64)."""
    if name == "torch":
        import torch

        def conv(t):
            if case.layout == "NHWC" and t.dim() == 4:
                t = t.permute(0, 2, 3, 1)
            if t.dtype == torch.bfloat16:
                return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16).view(_numpy_dtype("bfloat16"))
            return np.ascontiguousarray(t.numpy())
        if case.indices:
            y, i = conv(result[0]), conv(result[1])
            planes = np.arange(int(np.prod(y.shape[:2]))).reshape(y.shape[:2] + (1,) * (y.ndim - 2))
            return y, i + planes * int(np.prod(inputs(case)[0].shape[2:]))
        return conv(result)
    if isinstance(result, tuple):
        return tuple(np.asarray(r) for r in result)
    return np.asarray(result)
