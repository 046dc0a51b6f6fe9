"""Run ONNX nodes of MaxPool, MaxUnpool and Col2Im with pooling's kernels.

Needs the optional ``onnx`` package (``pip install "pooling-kernels[onnx]"``);
``import pooling`` never imports it.

* ``run_node(node, inputs, opset=None)``: one ``NodeProto`` of the default domain
  or ``com.ms.internal.nhwc`` (channels-last MaxPool / MaxUnpool), its
  attributes read from the node, the version rules of ``opset`` (default: the
  operator's newest version) applied, omitted optional inputs and outputs
  (empty names) handled as ONNX does.
* ``ops``: ``onnx.reference.op_run.OpRun`` classes, for
  ``ReferenceEvaluator(model, new_ops=pooling.onnx.ops)``.
* ``backend``: an ``onnx.backend.base.Backend`` for models made of these
  operators, so ``onnx.backend.test.BackendTest`` can run the official node tests.
"""
try:
    import onnx
    from onnx import numpy_helper
    from onnx.backend.base import Backend, BackendRep, namedtupledict
    from onnx.reference.op_run import OpRun
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "pooling.onnx needs the onnx package: pip install 'pooling-kernels[onnx]'"
    ) from e

from ._attrs import VERSIONS

NHWC_DOMAIN = "com.ms.internal.nhwc"
_LAYOUTS = {"": "NCHW", "ai.onnx": "NCHW", NHWC_DOMAIN: "NHWC"}

# Attributes each operator reads from a node, by domain.
_ATTRIBUTES = {
    "MaxPool": {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
    "MaxUnpool": {"kernel_shape", "pads", "strides"},
    "Col2Im": {"dilations", "pads", "strides"},
}
_NHWC_EXTRA = {"MaxPool": {"activation", "activation_params"}, "MaxUnpool": set()}


def run_node(node, inputs, opset=None):
    """Outputs of `node` (a list aligned with ``node.output``; None where a name is empty).

    `inputs` are aligned with ``node.input``: a missing trailing input or an
    empty input name means the optional input is omitted.  Raises ValueError for
    an operator or domain this library does not implement, or an attribute the
    operator does not have.
    """
    op = node.op_type
    layout = _checked_layout(node)
    attrs = {}
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        attrs[attribute.name] = value.decode() if isinstance(value, bytes) else value
    values = [v if i < len(node.input) and node.input[i] else None for i, v in enumerate(inputs)]
    values += [None] * (len(node.input) - len(values))
    if opset is None:
        opset = VERSIONS[op][-1]
    outputs = _RUNNERS[op](values, attrs, layout, opset, node)
    outputs += [None] * (len(node.output) - len(outputs))
    return [out if name else None for out, name in zip(outputs, node.output)]


def _checked_layout(node):
    """The layout of a node run_node runs (its domain's); a ValueError for an operator or domain
    this library does not implement, or an attribute the operator does not have."""
    op, domain = node.op_type, node.domain
    if domain not in _LAYOUTS:
        raise ValueError(f"pooling.onnx: domain {domain!r} is not supported "
                         f"(only the default domain and {NHWC_DOMAIN!r})")
    layout = _LAYOUTS[domain]
    allowed = _ATTRIBUTES.get(op)
    if allowed is None or (layout == "NHWC" and op not in _NHWC_EXTRA):
        raise ValueError(f"pooling.onnx: operator {op!r} in domain {domain!r} is not supported")
    if layout == "NHWC":
        allowed = allowed | _NHWC_EXTRA[op]
    for attribute in node.attribute:
        if attribute.name not in allowed:
            raise ValueError(f"{op}: unknown attribute {attribute.name!r}")
    return layout


def _opsets(model):
    """{domain: the opset the model imports it at}, the default domain as ''."""
    return {(imp.domain or ""): imp.version for imp in model.opset_import}


def _input(op, values, index, name):
    if index >= len(values) or values[index] is None:
        raise ValueError(f"{op}: required input {name!r} is missing")
    return values[index]


def _max_pool(values, attrs, layout, opset, node):
    from . import max_pool

    want_indices = len(node.output) > 1 and bool(node.output[1])
    result = max_pool(_input("MaxPool", values, 0, "X"), layout=layout, opset=opset,
                      return_indices=want_indices, **attrs)
    return list(result) if want_indices else [result]


def _max_unpool(values, attrs, layout, opset, node):
    from . import max_unpool

    output_shape = values[2] if len(values) > 2 else None
    return [max_unpool(_input("MaxUnpool", values, 0, "X"), _input("MaxUnpool", values, 1, "I"),
                       output_shape=output_shape, layout=layout, opset=opset, **attrs)]


def _col2im(values, attrs, layout, opset, node):
    from . import col2im

    return [col2im(_input("Col2Im", values, 0, "input"), _input("Col2Im", values, 1, "image_shape"),
                   _input("Col2Im", values, 2, "block_shape"), opset=opset, **attrs)]


_RUNNERS = {"MaxPool": _max_pool, "MaxUnpool": _max_unpool, "Col2Im": _col2im}


# ---------------------------------------------------------------------------
# onnx.reference integration
# ---------------------------------------------------------------------------

class _PoolingOp(OpRun):
    """Runs its node with run_node at the evaluator's opset for the node's domain."""

    def _run(self, *inputs, **attributes):  # attributes are read from the node itself
        opset = self.run_params.get("opsets", {}).get(self.onnx_node.domain)
        outputs = run_node(self.onnx_node, list(inputs), opset=opset)
        return tuple(outputs)


def _op_class(op_type, domain):
    # The evaluator looks new operators up by (op_domain, class name).
    return type(op_type, (_PoolingOp,), {"op_domain": domain, "__doc__": f"{op_type} ({domain or 'ai.onnx'})"})


ops = [
    _op_class("MaxPool", ""),
    _op_class("MaxUnpool", ""),
    _op_class("Col2Im", ""),
    _op_class("MaxPool", NHWC_DOMAIN),
    _op_class("MaxUnpool", NHWC_DOMAIN),
]


# ---------------------------------------------------------------------------
# onnx.backend integration
# ---------------------------------------------------------------------------

class PoolingBackendRep(BackendRep):
    """A prepared model: its nodes run in order with run_node."""

    def __init__(self, model):
        self.graph = model.graph
        self.opsets = _opsets(model)
        self.constants = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}

    def run(self, inputs, **kwargs):
        values = dict(self.constants)
        feeds = [i.name for i in self.graph.input if i.name not in self.constants]
        if isinstance(inputs, dict):
            values.update(inputs)
        else:
            values.update(zip(feeds, inputs))
        for node in self.graph.node:
            args = [values.get(name) if name else None for name in node.input]
            for name, value in zip(node.output, run_node(node, args, self.opsets.get(node.domain))):
                if name:
                    values[name] = value
        names = [o.name for o in self.graph.output]
        return namedtupledict("Outputs", names)(*[values[n] for n in names])


class PoolingBackend(Backend):
    """onnx.backend.base.Backend running MaxPool, MaxUnpool and Col2Im nodes on the CPU."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)  # checks the model
        return PoolingBackendRep(model)

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        """Whether prepare(model) can run every node of the graph on `device`: each a MaxPool,
        MaxUnpool or Col2Im that run_node supports (domain, attributes), at an opset the model
        imports that has the operator.  False, never an error, otherwise."""
        if not cls.supports_device(device):
            return False
        opsets = _opsets(model)
        for node in model.graph.node:
            try:
                _checked_layout(node)
            except ValueError:
                return False
            opset = opsets.get(node.domain)  # as PoolingBackendRep.run reads it
            if opset is not None and opset < VERSIONS[node.op_type][0]:
                return False
        return True

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        return run_node(node, list(inputs))

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"


backend = PoolingBackend

__all__ = ["run_node", "ops", "backend", "PoolingBackend", "PoolingBackendRep", "NHWC_DOMAIN"]
