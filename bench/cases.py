"""The benchmark cases: one comparison group per (operator, shape, dtype, attributes).

Each implementation of a case is built by `implementations(case)`: pooling (all
threads, one thread, and with preallocated `out=` buffers), onnxruntime, torch
and OpenVINO where installed, and `floor`, a numpy copy that moves exactly the
bytes the operation must read and write (this machine's memory floor, measured
in the same run).  Every implementation returns its result so the benchmark
can check it against the reference.
"""
import functools
import os
import tempfile
from dataclasses import dataclass

import numpy as np

import pooling
from pooling import reference

THREADS = 2  # peers and pooling run with the same thread count
ZOO_PREFIX = "zoo "  # group names of the model-zoo sweep (zoo.py) start with it


@dataclass(frozen=True)
class Case:
    op: str                       # "MaxPool", "MaxUnpool" or "Col2Im"
    shape: tuple                  # the main input's shape
    dtype: str
    attrs: tuple = ()             # (name, value) pairs of ONNX attributes
    indices: bool = False         # MaxPool: also return Indices
    layout: str = "NCHW"
    image: tuple = ()             # Col2Im: image_shape and block_shape
    block: tuple = ()
    family: str = ""              # model-zoo cases (zoo.py): the model family it comes from

    @property
    def id(self):
        attrs = " ".join(f"{k}={_short(v)}" for k, v in self.attrs)
        parts = [self.op, "x".join(map(str, self.shape)), self.dtype, attrs]
        if self.image:
            parts.append(f"image={_short(self.image)} block={_short(self.block)}")
        if self.indices:
            parts.append("+Indices")
        if self.layout != "NCHW":
            parts.append(self.layout)
        text = " ".join(p for p in parts if p)
        return f"{ZOO_PREFIX}{self.family}: {text}" if self.family else text

    @property
    def kwargs(self):
        return dict(self.attrs)

    @property
    def spatial_rank(self):
        return len(self.image) if self.op == "Col2Im" else len(self.shape) - 2


def _short(v):
    return ",".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


def _pool(shape, dtype="float32", k=3, s=2, p=1, indices=False, layout="NCHW", op="MaxPool"):
    n = len(shape) - 2
    attrs = (("kernel_shape", (k,) * n), ("strides", (s,) * n))
    if p:
        attrs += (("pads", (p,) * (2 * n)),)
    return Case(op, shape, dtype, attrs, indices, layout)


CASES = [
    # MaxPool float32 without Indices: ResNet-like shapes, 1-D and 3-D.
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
    # library-mode dtypes: label volumes downsampled by max (3-D k2 s2), a mask dilated (k3 s1 p1; torch: its
    # uint8 cast, cast included)
    _pool((1, 1, 96, 256, 256), "uint16", k=2, s=2, p=0),
    _pool((1, 1, 96, 256, 256), "uint32", k=2, s=2, p=0),
    _pool((1, 1, 1024, 1024), "bool", k=3, s=1, p=1),
    # channels-last (against torch channels_last on the same data)
    _pool((8, 112, 112, 64), layout="NHWC"),
    # call overhead
    _pool((1, 1, 8, 8), k=2, s=2, p=0),
    # MaxUnpool of the k2 s2 MaxPool of 8x64x56x56 (X is the pooled 8x64x28x28)
    _pool((8, 64, 28, 28), k=2, s=2, p=0, op="MaxUnpool"),
    # Col2Im: the 3x3 pad-1 columns of 8x64x56x56
    Case("Col2Im", (8, 576, 3136), "float32", (("pads", (1, 1, 1, 1)),), image=(56, 56), block=(3, 3)),
]


def _numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.02  # a sparse mask
    if dtype in ("int8", "uint8"):
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)
    if dtype.startswith(("int", "uint")):  # labels: ids of up to a few thousand objects
        return rng.integers(0, 4096, size=shape).astype(dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(_numpy_dtype(dtype))


@functools.lru_cache(maxsize=None)
def inputs(case):
    """The case's input arrays (deterministic), as a tuple."""
    if case.op == "MaxUnpool":
        # X and I as MaxPool makes them from an input twice the size.
        big = tuple(case.shape[:2]) + tuple(2 * d for d in case.shape[2:])
        x, i = pooling.max_pool(_data(big, case.dtype), **case.kwargs, return_indices=True)
        return x, i
    return (_data(case.shape, case.dtype),)


def pooling_call(case, n_threads=None, out=None):
    """A zero-argument callable running the case with pooling (arguments bound once,
    so the benchmark times the library, not this harness)."""
    args = inputs(case)
    kw = dict(n_threads=n_threads, **(out or {}))
    if case.op == "MaxUnpool":
        return functools.partial(pooling.max_unpool, *args, **case.kwargs, **kw)
    if case.op == "Col2Im":
        return functools.partial(pooling.col2im, *args, case.image, case.block, **case.kwargs, **kw)
    return functools.partial(pooling.max_pool, *args, **case.kwargs, return_indices=case.indices,
                             layout=case.layout, **kw)


@functools.lru_cache(maxsize=None)
def expected(case):
    """pooling's result, checked once against pooling.reference."""
    got = pooling_call(case, n_threads=1)()
    args = inputs(case)
    if case.op == "MaxUnpool":
        want = reference.max_unpool(*args, **case.kwargs)
        assert got.tobytes() == want.tobytes()
    elif case.op == "Col2Im":
        want = reference.col2im(*args, case.image, case.block, **case.kwargs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # summation order may differ
    else:
        y, i = reference.max_pool(args[0], **case.kwargs, return_indices=True, layout=case.layout)
        y_got = got[0] if case.indices else got
        assert y_got.tobytes() == y.tobytes()
        if case.indices:
            assert np.array_equal(got[1], i)
    return got


def moved_bytes(case):
    """Bytes the operation must read and write at the least."""
    read = sum(a.nbytes for a in inputs(case))
    got = expected(case)
    return read + sum(a.nbytes for a in (got if isinstance(got, tuple) else (got,)))


# ---------------------------------------------------------------------------
# Implementations
# ---------------------------------------------------------------------------

class Unavailable(Exception):
    """This implementation cannot run this case here (peer not installed or no support)."""


def implementations(case):
    """name -> factory; a factory returns a zero-argument callable (or raises Unavailable).

    Model-zoo cases also run each peer at one thread ("<peer> 1 thread"), and not with out=."""
    # pooling's thread count is explicit too: torch.set_num_threads (a peer's factory) sets the
    # OpenMP thread count of the calling thread, which is also pooling's default.
    impls = {
        "pooling": lambda: pooling_call(case, THREADS),
        "pooling 1 thread": lambda: pooling_call(case, 1),
        "pooling out=": lambda: _pooling_out(case),
        "onnxruntime": lambda: _onnxruntime(case),
        "torch": lambda: _torch(case),
        "openvino": lambda: _openvino(case),
        "floor": lambda: _floor(case),
    }
    if case.family:
        del impls["pooling out="]
        impls.update({
            "onnxruntime 1 thread": lambda: _onnxruntime(case, 1),
            "torch 1 thread": lambda: _torch(case, 1),
            "openvino 1 thread": lambda: _openvino(case, 1),
        })
    return impls


def _pooling_out(case):
    got = expected(case)
    if case.op == "MaxPool" and case.indices:
        out = {"out": np.empty_like(got[0]), "indices_out": np.empty_like(got[1])}
    else:
        out = {"out": np.empty_like(got)}
    return pooling_call(case, THREADS, out)


def _floor(case):
    half = moved_bytes(case) // 2
    src = np.ones(half, dtype=np.uint8)
    dst = np.zeros(half, dtype=np.uint8)
    return functools.partial(np.copyto, dst, src)


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16}


def onnx_model(case):
    """(model bytes, input names) of a single-node ONNX model of the case."""
    try:
        from onnx import TensorProto, helper
    except ImportError as e:
        raise Unavailable("onnx is not installed") from e
    if case.layout != "NCHW" and (case.op != "MaxPool" or case.indices):
        raise Unavailable("no NHWC operator in the default ONNX domain")
    args = inputs(case)
    elem = _ONNX_TYPES[case.dtype]
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in case.attrs}
    if case.op == "Col2Im":
        names = ["X", "S", "B"]
        args = args + (np.array(case.image, np.int64), np.array(case.block, np.int64))
    elif case.op == "MaxUnpool":
        names = ["X", "I"]
    else:
        names = ["X"]
    outputs = ["Y", "I_out"] if case.indices else ["Y"]
    nodes = [helper.make_node(case.op, names, outputs, **attrs)]
    if case.layout == "NHWC":
        # A channels-last model as exporters write it: NCHW MaxPool between two transposes.
        last = list(range(len(case.shape)))
        first = [0, last[-1]] + last[1:-1]
        nodes = [helper.make_node("Transpose", ["X"], ["Xt"], perm=first),
                 helper.make_node(case.op, ["Xt"], ["Yt"], **attrs),
                 helper.make_node("Transpose", ["Yt"], ["Y"], perm=[0] + last[2:] + [1])]
    types = {np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info(n, types.get(a.dtype, elem), a.shape) for n, a in zip(names, args)],
        [helper.make_tensor_value_info(o, elem if o == "Y" else TensorProto.INT64, None) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    return model.SerializeToString(), dict(zip(names, args))


def _onnxruntime(case, threads=THREADS):
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise Unavailable("onnxruntime is not installed") from e
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    model, feed = onnx_model(case)
    try:
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. a dtype it has no kernel for
        raise Unavailable(f"onnxruntime: {str(e).splitlines()[0][:80]}") from e
    return lambda: tuple(session.run(None, feed)) if case.indices else session.run(None, feed)[0]


def _torch_tensor(torch, x):
    if x.dtype.name == "bfloat16":
        return torch.from_numpy(x.view(np.uint16).astype(np.int32) << 16).view(torch.float32).to(torch.bfloat16)
    return torch.from_numpy(x)


def _torch(case, threads=THREADS):
    try:
        import torch
    except ImportError as e:
        raise Unavailable("torch is not installed") from e
    torch.set_num_threads(threads)
    n = case.spatial_rank
    if n > 3:
        raise Unavailable("torch pools at most 3 spatial axes")
    kw = case.kwargs
    pads = kw.get("pads", (0,) * (2 * n))
    if any(pads[i] != pads[i + n] for i in range(n)):
        raise Unavailable("torch has symmetric pads only")
    args = [_torch_tensor(torch, a) for a in inputs(case)]
    F = torch.nn.functional
    if case.op == "Col2Im":
        if n != 2:
            raise Unavailable("torch folds 2-D images only")
        fn = functools.partial(F.fold, args[0], output_size=case.image, kernel_size=case.block,
                               padding=pads[:n], stride=kw.get("strides", 1), dilation=kw.get("dilations", 1))
    elif case.op == "MaxUnpool":
        # torch's indices are offsets within each plane.
        plane = int(np.prod([2 * d for d in case.shape[2:]]))
        local = args[1] % plane
        fn = functools.partial(getattr(F, f"max_unpool{n}d"), args[0], local, kw["kernel_shape"],
                               stride=kw.get("strides"))
    else:
        if case.dtype in ("int8", "uint8") and case.indices:
            raise Unavailable("torch max_pool has no integer Indices kernel")
        x = args[0].permute(0, 3, 1, 2) if case.layout == "NHWC" else args[0]  # channels_last view
        fn = functools.partial(getattr(F, f"max_pool{n}d"), x, kernel_size=kw["kernel_shape"],
                               stride=kw.get("strides", 1), padding=pads[:n], return_indices=case.indices,
                               dilation=kw.get("dilations", 1), ceil_mode=bool(kw.get("ceil_mode", 0)))
        if case.dtype == "bool":  # torch pools no bool: a mask is cast to uint8 and back
            pool = functools.partial(fn.func, *fn.args[1:], **fn.keywords)
            fn = functools.partial(lambda t: pool(t.to(torch.uint8)).bool(), x)
    try:
        fn()
    except RuntimeError as e:
        raise Unavailable(f"torch: {str(e).splitlines()[0][:80]}") from e

    def run():
        with torch.no_grad():
            return fn()
    return run


def _openvino(case, threads=THREADS):
    try:
        import openvino as ov
    except ImportError as e:
        raise Unavailable("openvino is not installed") from e
    if case.dtype == "bfloat16":
        raise Unavailable("openvino takes no bfloat16 numpy input")
    model, feed = onnx_model(case)
    with tempfile.TemporaryDirectory(prefix="pooling-bench-") as folder:  # compiled, the file can go
        path = os.path.join(folder, "model.onnx")
        with open(path, "wb") as f:
            f.write(model)
        try:
            compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads})
        except Exception as e:
            raise Unavailable(f"openvino: {str(e).splitlines()[0][:80]}") from e
    request = compiled.create_infer_request()
    values = list(feed.values())

    def run():
        r = request.infer(values)
        return tuple(r.values()) if case.indices else next(iter(r.values()))
    return run


def to_numpy(case, name, result):
    """A peer's result as numpy arrays comparable with pooling's (Indices as global int64)."""
    if not name.startswith("torch"):
        return tuple(np.asarray(r) for r in result) if isinstance(result, tuple) else np.asarray(result)
    import torch

    def conv(t):
        if case.layout == "NHWC" and t.dim() == 4:
            t = t.permute(0, 2, 3, 1)
        if t.dtype == torch.bfloat16:
            return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16).view(_numpy_dtype("bfloat16"))
        return np.ascontiguousarray(t.numpy())
    if isinstance(result, tuple):
        y, i = conv(result[0]), conv(result[1])
        if case.layout == "NHWC":  # (n * pixels + pixel) * C + c: offsets into x's NHWC memory
            shape = inputs(case)[0].shape
            n = np.arange(shape[0]).reshape((-1,) + (1,) * (y.ndim - 1))
            c = np.arange(shape[-1])
            return y, (n * int(np.prod(shape[1:-1])) + i) * shape[-1] + c
        planes = np.arange(int(np.prod(y.shape[:2]))).reshape(y.shape[:2] + (1,) * (y.ndim - 2))
        return y, i + planes * int(np.prod(inputs(case)[0].shape[2:]))
    return conv(result)
