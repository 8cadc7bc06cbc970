"""One partition of an ATen FX graph to a function of kopt ops (MLIR text).

Shapes. kopt's ops see each tensor in its *canonical shape* ``c(S)``: a rank-0
or rank-1 shape as it is, and a rank-2-or-more shape ``[d0, ..., dk, N]`` as the
2-D ``[d0 * ... * dk, N]`` (the rows kopt's row ops and matmuls work on; the
same elements in the same row-major order). Views that keep the canonical
shape (``view``, ``_unsafe_view``, ``squeeze``, ``unsqueeze``, ``alias``,
``clone``, ``detach``, ``expand`` to the same shape) are free; a view that
changes it (splitting heads, ``[T, 4096] -> [T, 32, 128]``) has no kopt
equivalent (kopt has no reshape op) and stays with PyTorch. A broadcast operand
is representable when its missing and size-1 leading dimensions make it a row
vector (``[N]``, ``[1, 1, N]``), a column (``[d0, ..., dk, 1]`` against
``[d0, ..., dk, N]``) or a scalar. ``t``, 2-D ``transpose`` and ``permute`` feed
``mm``/``addmm`` as kopt.matmul's ``transpose_a``/``transpose_b`` (nn.Linear's
``x W^T`` reads the weight as stored).

Precision. Each ATen op is translated to kopt ops that round where PyTorch's
CUDA kernels round (docs/ops.md gives kopt's roundings): 16-bit elementwise ops
compute in f32 and round once; a Python scalar is applied in f32 (PyTorch's
"opmath"), so a scalar not exact in bf16/f16 gets an f32 path (cast, op, cast
back, still one rounding); ``addmm`` accumulates in f32, adds the bias in f32
and rounds once (cuBLASLt's bias epilogue). Anything kopt cannot express
exactly raises :class:`Unsupported` with the reason, and the node stays with
PyTorch.
"""

from __future__ import annotations

import math
import operator
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch
import torch.fx

aten = torch.ops.aten
prims = torch.ops.prims

DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}
_getitem = operator.getitem


class Unsupported(Exception):
    """A node kopt cannot compute exactly; the message says why."""


def canonical(shape: Sequence[int]) -> Tuple[int, ...]:
    """c(S): rank 0 and 1 as they are, higher ranks as [prod(leading), last]."""
    shape = tuple(int(d) for d in shape)
    if len(shape) <= 1:
        return shape
    return (math.prod(shape[:-1]), shape[-1])


def tensor_type(shape: Sequence[int], dtype: str) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def f32_literal(x: float) -> str:
    """An MLIR f32 attribute literal that is exactly the f32 nearest ``x``."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return f"0x{bits:08X}"


def _round_to(x: float, dtype: str) -> float:
    """``x`` rounded to f32, then to ``dtype`` (the value kopt would hold)."""
    t = torch.tensor(x, dtype=torch.float64).to(torch.float32)
    return float(t.to(TORCH_DTYPES[dtype]).to(torch.float32))


@dataclass
class Value:
    """A tensor inside the kopt function: its SSA name, the kopt shape it has
    there (``kshape``), the FX shape it stands for and its kopt dtype."""
    ssa: str
    kshape: Tuple[int, ...]
    shape: Tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        return tensor_type(self.kshape, self.dtype)

    def usable(self, what: str, canon=None) -> "Value":
        if self.kshape != (canon or canonical)(self.shape):
            raise Unsupported(f"{what} is a reduction result of shape "
                              f"{list(self.shape)} held as {list(self.kshape)}; "
                              f"using it needs a reshape, which kopt has not")
        return self


@dataclass
class Transposed:
    """The 2-D transpose of ``base`` (not materialized: matmul reads it)."""
    base: Value
    shape: Tuple[int, ...]


@dataclass
class LayerNormResult:
    """native_layer_norm's (output, mean, rstd), or batch norm's (output,
    save_mean, save_invstd): only the output is kept."""
    out: Value


@dataclass
class Scalar:
    """A Python number operand."""
    value: float


@dataclass
class Function:
    """The translated function: MLIR text and how its arguments and results
    bind to the partition's placeholders and nodes."""
    mlir: str
    name: str
    #: placeholder index of each tensor argument, in argument order
    arg_placeholders: List[int]
    #: (value, kopt dtype) of each constant argument (rank 0), after the tensors
    constants: List[Tuple[float, str]]
    #: for each kopt result: (node name, kshape, kopt dtype)
    results: List[Tuple[str, Tuple[int, ...], str]]
    #: aten ops translated (by name), for the report
    ops: List[str]


def node_val(node: Any):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def node_dtype(node: torch.fx.Node) -> str:
    val = node_val(node)
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"{node.name} has no tensor metadata")
    dt = DTYPES.get(val.dtype)
    if dt is None:
        raise Unsupported(f"dtype {val.dtype} (kopt computes on float32, "
                          f"float16 and bfloat16)")
    return dt


def node_shape(node: torch.fx.Node) -> Tuple[int, ...]:
    val = node_val(node)
    try:
        return tuple(int(d) for d in val.shape)
    except (TypeError, ValueError):
        raise Unsupported(f"{node.name} has a symbolic shape") from None


def _last_dim(dims, rank: int) -> bool:
    """``dims`` (an int or a list) names exactly the last dimension."""
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or len(dims) != 1 or rank < 1:
        return False
    return dims[0] in (-1, rank - 1)


class Translator:
    """Emits kopt ops for the nodes of one partition (a GraphModule made by
    fuse_by_partitions: placeholders, ATen call_function nodes, an output)."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, allow_tf32: bool):
        self.gm = gm
        self.name = name
        self.allow_tf32 = allow_tf32
        self.lines: List[str] = []
        self.values: Dict[torch.fx.Node, Any] = {}
        self.computed: Dict[torch.fx.Node, bool] = {}
        self.args: List[Tuple[int, Value]] = []
        self.constants: List[Tuple[float, str, str]] = []  # value, dtype, ssa
        self.ops: List[str] = []
        self._n = 0
        self.layout = Coalesced.of(gm)

    # --- emission helpers --------------------------------------------------
    def fresh(self) -> str:
        self._n += 1
        return f"%v{self._n}"

    def emit(self, text: str, kshape, shape, dtype) -> Value:
        ssa = self.fresh()
        self.lines.append(f"    {ssa} = {text}")
        return Value(ssa, tuple(kshape), tuple(shape), dtype)

    def cast(self, v: Value, dtype: str) -> Value:
        if v.dtype == dtype:
            return v
        return self.emit(f"kopt.cast {v.ssa} : {v.type} to "
                         f"{tensor_type(v.kshape, dtype)}", v.kshape, v.shape, dtype)

    def scalar(self, x: float, dtype: str) -> Value:
        for value, dt, ssa in self.constants:
            if dt == dtype and struct.pack("<d", value) == struct.pack("<d", x):
                return Value(ssa, (), (), dtype)
        ssa = f"%c{len(self.constants)}"
        self.constants.append((x, dtype, ssa))
        return Value(ssa, (), (), dtype)

    def value(self, arg: Any, what: str = "operand"):
        if isinstance(arg, torch.fx.Node):
            v = self.values.get(arg)
            if v is None:
                raise Unsupported(f"{what} {arg.name} is not available")
            return v
        if isinstance(arg, bool) or not isinstance(arg, (int, float)):
            raise Unsupported(f"{what} {arg!r} is not a tensor or a number")
        return Scalar(float(arg))

    def tensor(self, arg: Any, what: str = "operand") -> Value:
        v = self.value(arg, what)
        if isinstance(v, Transposed):
            raise Unsupported(f"{what} is a transposed view, which only a "
                              f"matmul can read")
        if not isinstance(v, Value):
            raise Unsupported(f"{what} is not a tensor")
        return v.usable(what, self.canon)

    def canon(self, shape: Sequence[int]) -> Tuple[int, ...]:
        """The kopt shape of an FX shape in this partition: c(S), or the
        coalesced shape of an elementwise partition (:class:`Coalesced`)."""
        return self.layout.kshape(shape) if self.layout else canonical(shape)

    # --- the walk ------------------------------------------------------------
    def run(self) -> Function:
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for i, ph in enumerate(placeholders):
            val = node_val(ph)
            if isinstance(val, torch.Tensor):
                shape = node_shape(ph)
                dtype = DTYPES.get(val.dtype)
                if dtype is not None:
                    v = Value(f"%a{i}", self.canon(shape), shape, dtype)
                    self.values[ph] = v
                    self.args.append((i, v))
        output = None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                output = node
                continue
            if node.op != "call_function":
                raise Unsupported(f"{node.op} nodes are not translated")
            handler = HANDLERS.get(node.target)
            if handler is None:
                raise NodeUnsupported(node, "no kopt translation")
            try:
                result = handler(self, node)
            except Unsupported as e:
                raise NodeUnsupported(node, str(e)) from None
            self.values[node] = result
            self.computed[node] = _is_new(result, node, self)
            self.ops.append(op_name(node.target))
        return self._finish(output)

    def _finish(self, output: torch.fx.Node) -> Function:
        outs = output.args[0]
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        # kopt results: computed nodes that are outputs, or that an output
        # reaches through views evaluated in Python.
        results: List[torch.fx.Node] = []

        def need(node):
            if not isinstance(node, torch.fx.Node) or node.op == "placeholder":
                return
            if self.computed.get(node):
                v = self.values[node]
                if not isinstance(v, Value):
                    raise NodeUnsupported(node, "its result cannot be returned")
                if node not in results:
                    results.append(node)
                return
            for a in node.all_input_nodes:
                need(a)

        for o in outs:
            need(o)
        if not results:
            raise Unsupported("the partition computes nothing")
        body = "\n".join(self.lines)
        used = set(re.findall(r"%a[0-9]+\b", body))
        arg_list = [(i, v) for i, v in self.args if v.ssa in used]
        sig = [f"{v.ssa}: {v.type}" for _, v in arg_list]
        sig += [f"{ssa}: {tensor_type((), dt)}" for _, dt, ssa in self.constants]
        rvals = [self.values[n] for n in results]
        rets = ", ".join(v.ssa for v in rvals)
        rtypes = ", ".join(v.type for v in rvals)
        text = (f"func.func @{self.name}({', '.join(sig)}) -> ({rtypes}) {{\n"
                f"{body}\n    return {rets} : {rtypes}\n}}\n")
        return Function(
            mlir=text, name=self.name,
            arg_placeholders=[i for i, _ in arg_list],
            constants=[(x, dt) for x, dt, _ in self.constants],
            results=[(n.name, v.kshape, v.dtype) for n, v in zip(results, rvals)],
            ops=self.ops)


class NodeUnsupported(Exception):
    """Translation failed at ``node`` (the partitioner rejects that node)."""

    def __init__(self, node: torch.fx.Node, reason: str):
        super().__init__(f"{node.name} ({op_name(node.target)}): {reason}")
        self.node = node
        self.reason = reason


def _is_new(result, node, tr: Translator) -> bool:
    """Whether ``node`` computed a new kopt value (else it is a view of one,
    or of an argument, that Python makes from the tensor it views)."""
    if not isinstance(result, Value) or not result.ssa.startswith("%v"):
        return False
    return all(not (isinstance(tr.values.get(a), Value)
                    and tr.values[a].ssa == result.ssa)
               for a in node.all_input_nodes)


def op_name(target) -> str:
    """``aten.mm.default``, ``kopt.rmsnorm`` (the pattern pass's node), or
    the Python name of another callable."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if target is rmsnorm_reference:
        return "kopt.rmsnorm"
    return getattr(target, "__name__", None) or str(target)


# --- broadcasting --------------------------------------------------------------

def _canonical_broadcast(a: Tuple[int, ...], out_shape: Tuple[int, ...]) -> bool:
    """Whether an operand of shape ``a`` broadcast to ``out_shape`` is, in
    the canonical 2-D shapes, the result's shape, a row vector, a column or a
    scalar (what kopt's broadcasting reads from c(a))."""
    r = len(out_shape)
    if len(a) > r:
        return False
    padded = (1,) * (r - len(a)) + tuple(a)
    if padded == tuple(out_shape) or r <= 1:
        return True
    lead, out_lead = padded[:-1], tuple(out_shape[:-1])
    if all(d == 1 for d in lead) and padded[-1] in (1, out_shape[-1]):
        return True  # a row vector or a scalar
    return padded[-1] == 1 and lead == out_lead  # a column: [P, 1] vs [P, N]


class Coalesced:
    """The kopt shapes of an elementwise partition whose broadcasts the
    canonical 2-D shapes cannot express (a per-channel bias ``[C, 1, 1]``
    against ``[N, C, H, W]``): every op's result has one shape ``S`` and
    every input broadcasts to it. Dimensions of size 1 in ``S`` are dropped
    and neighbouring dimensions that every input reads alike (all of both, or
    neither) are merged, as PyTorch's TensorIterator coalesces them: ``[N, C,
    H, W]`` with ``[C, 1, 1]`` is ``[N, C, H*W]`` with ``[1, C, 1]``. kopt
    broadcasts these N-D shapes as NumPy does; the elements and their
    row-major order are unchanged, so no data moves."""

    def __init__(self, full: Tuple[int, ...], groups: List[List[int]]):
        self.full = full
        self.groups = groups  # dimensions of S merged into each kopt dim

    def kshape(self, shape: Sequence[int]) -> Tuple[int, ...]:
        shape = tuple(int(d) for d in shape)
        if not shape:
            return ()
        r = len(self.full)
        if len(shape) > r:
            raise Unsupported(f"shape {list(shape)} has more dimensions than "
                              f"the partition's {list(self.full)}")
        padded = (1,) * (r - len(shape)) + shape
        out = []
        for g in self.groups:
            dims = [padded[i] for i in g]
            if all(d == 1 for d in dims):
                out.append(1)
            elif all(padded[i] == self.full[i] for i in g):
                out.append(math.prod(dims))
            else:
                raise Unsupported(f"shape {list(shape)} does not broadcast to "
                                  f"{list(self.full)} along whole groups")
        return tuple(out)

    @staticmethod
    def of(gm: torch.fx.GraphModule):
        """The coalesced layout of ``gm``, or None where the canonical 2-D
        shapes serve (or the partition is not elementwise on one shape)."""
        full = None
        inputs = []
        for node in gm.graph.nodes:
            val = node_val(node)
            if node.op == "placeholder":
                if isinstance(val, torch.Tensor):
                    inputs.append(val)
                continue
            if node.op != "call_function":
                continue
            if node.target not in ELEMENTWISE_TARGETS or not isinstance(val, torch.Tensor):
                return None
            try:
                shape = tuple(int(d) for d in val.shape)
            except (TypeError, ValueError):
                return None
            if full is None:
                full = shape
            elif shape != full:
                return None
        if full is None or len(full) < 3:
            return None
        shapes = []
        for val in inputs:
            try:
                a = tuple(int(d) for d in val.shape)
            except (TypeError, ValueError):
                return None
            if len(a) > len(full):
                return None
            padded = (1,) * (len(full) - len(a)) + a
            if any(d not in (1, f) for d, f in zip(padded, full)):
                return None
            shapes.append(padded)
        if all(_canonical_broadcast(a, full) for a in shapes):
            return None
        groups: List[List[int]] = []
        last = None
        for i, f in enumerate(full):
            if f == 1:
                continue
            pattern = tuple(a[i] == f for a in shapes)
            if groups and pattern == last:
                groups[-1].append(i)
            else:
                groups.append([i])
            last = pattern
        if not groups:
            return None
        return Coalesced(full, groups)


def _operand(tr: Translator, arg, out_shape: Tuple[int, ...], what: str):
    """An elementwise operand as a Value in kopt's broadcasting, or a Scalar."""
    v = tr.value(arg, what)
    if isinstance(v, Scalar):
        return v
    v = tr.tensor(arg, what)
    r = len(out_shape)
    a = v.shape
    if len(a) > r:
        raise Unsupported(f"{what} has more dimensions than the result")
    if tr.layout is not None or _canonical_broadcast(a, out_shape):
        return v  # coalesced: kopt broadcasts v.kshape as NumPy does
    raise Unsupported(f"broadcast of {what} {list(a)} to {list(out_shape)} is "
                      f"not a row, a column or a scalar of the canonical 2-D shape")


def _f32(x: float) -> float:
    """x converted to f32 as PyTorch converts a Python number to its opmath
    type (beyond the f32 range: +-inf)."""
    return float(torch.tensor(x, dtype=torch.float64).to(torch.float32))


def _exact_in(x: float, dtype: str) -> bool:
    if dtype == "f32":
        return True
    f32 = _f32(x)
    r = _round_to(x, dtype)
    return r == f32 or (math.isnan(f32) and math.isnan(r))


def _binary(tr: Translator, node, kop: str, lhs, rhs) -> Value:
    out_dtype = node_dtype(node)
    out_shape = node_shape(node)
    a = _operand(tr, lhs, out_shape, "lhs")
    b = _operand(tr, rhs, out_shape, "rhs")
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        raise Unsupported("both operands are numbers")
    if kop == "div" and isinstance(b, Scalar):
        # PyTorch's CUDA division by a number multiplies by its reciprocal,
        # computed in f32 (div_true_kernel_cuda): do the same.
        kop = "mul"
        b = Scalar(float(torch.tensor(1.0, dtype=torch.float32)
                         / torch.tensor(_f32(b.value), dtype=torch.float32)))
    # A number not exact in a 16-bit result type is applied in f32 (PyTorch's
    # opmath): cast the tensor up, compute, round once at the end.
    compute = out_dtype
    for s in (a, b):
        if isinstance(s, Scalar) and not _exact_in(s.value, out_dtype):
            compute = "f32"

    def prep(x):
        if isinstance(x, Scalar):
            return tr.scalar(_f32(x.value), compute)
        return tr.cast(x, compute)

    a, b = prep(a), prep(b)
    kout = tr.canon(out_shape)
    res = tr.emit(f"kopt.{kop} {a.ssa}, {b.ssa} : {a.type}, {b.type} -> "
                  f"{tensor_type(kout, compute)}", kout, out_shape, compute)
    return tr.cast(res, out_dtype)


def _unary(tr: Translator, node, kop: str, x, attr: str = "") -> Value:
    out_dtype = node_dtype(node)
    v = tr.cast(tr.tensor(x, "input"), out_dtype)
    if v.shape != node_shape(node):
        raise Unsupported("the input's shape differs from the result's")
    return tr.emit(f"kopt.{kop} {v.ssa}{attr} : {v.type}", v.kshape, v.shape, out_dtype)


def _no_alpha(node):
    alpha = node.kwargs.get("alpha", 1)
    if alpha != 1:
        raise Unsupported(f"alpha={alpha}")


# --- handlers ------------------------------------------------------------------
Handler = Callable[[Translator, torch.fx.Node], Any]
HANDLERS: Dict[Any, Handler] = {}


def handles(*targets):
    def deco(fn):
        for t in targets:
            HANDLERS[t] = fn
        return fn
    return deco


def _binary_handler(kop):
    def handler(tr, node):
        _no_alpha(node)
        if len(node.args) > 2:
            raise Unsupported("alpha given positionally")
        return _binary(tr, node, kop, node.args[0], node.args[1])
    return handler


for _t, _k in [(aten.add.Tensor, "add"), (aten.add.Scalar, "add"),
               (aten.sub.Tensor, "sub"), (aten.sub.Scalar, "sub"),
               (aten.mul.Tensor, "mul"), (aten.mul.Scalar, "mul"),
               (aten.div.Tensor, "div"), (aten.div.Scalar, "div"),
               (aten.maximum.default, "max"), (aten.minimum.default, "min")]:
    HANDLERS[_t] = _binary_handler(_k)


@handles(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(tr, node):
    _no_alpha(node)
    if len(node.args) > 2:
        raise Unsupported("alpha given positionally")
    return _binary(tr, node, "sub", node.args[1], node.args[0])


def _unary_handler(kop):
    def handler(tr, node):
        return _unary(tr, node, kop, node.args[0])
    return handler


for _t, _k in [(aten.neg.default, "neg"), (aten.exp.default, "exp"),
               (aten.abs.default, "abs"), (aten.sqrt.default, "sqrt"),
               (aten.rsqrt.default, "rsqrt"), (aten.tanh.default, "tanh"),
               (aten.sigmoid.default, "sigmoid"), (aten.relu.default, "relu"),
               (aten.silu.default, "silu"), (aten.log.default, "log"),
               (aten.log1p.default, "log1p")]:
    HANDLERS[_t] = _unary_handler(_k)


@handles(aten.gelu.default)
def _gelu(tr, node):
    approx = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    if approx not in ("none", "tanh"):
        raise Unsupported(f"approximate={approx!r}")
    return _unary(tr, node, "gelu", node.args[0], f" approximate({approx})")


@handles(aten.reciprocal.default)
def _reciprocal(tr, node):
    return _binary(tr, node, "div", 1.0, node.args[0])


@handles(aten.pow.Tensor_Scalar)
def _pow(tr, node):
    x, e = node.args[0], node.args[1]
    if isinstance(e, bool) or not isinstance(e, (int, float)):
        raise Unsupported("the exponent is not a number")
    e = float(e)
    out_dtype = node_dtype(node)
    if e == 1.0:
        return tr.cast(tr.tensor(x), out_dtype)
    if e == 2.0:
        v = tr.cast(tr.tensor(x), out_dtype)
        return tr.emit(f"kopt.mul {v.ssa}, {v.ssa} : {v.type}, {v.type} -> {v.type}",
                       v.kshape, v.shape, out_dtype)
    if e == 3.0:
        if out_dtype != "f32":
            # PyTorch's pow kernel multiplies in the 16-bit type (two roundings).
            raise Unsupported("x^3 of a 16-bit tensor (PyTorch rounds x*x before "
                              "the second multiply)")
        v = tr.cast(tr.tensor(x), "f32")
        sq = tr.emit(f"kopt.mul {v.ssa}, {v.ssa} : {v.type}, {v.type} -> {v.type}",
                     v.kshape, v.shape, "f32")
        cube = tr.emit(f"kopt.mul {sq.ssa}, {v.ssa} : {v.type}, {v.type} -> {v.type}",
                       v.kshape, v.shape, "f32")
        return tr.cast(cube, out_dtype)
    if e == 0.5:
        return _unary(tr, node, "sqrt", x)
    if e == -0.5:
        return _unary(tr, node, "rsqrt", x)
    if e == -1.0:
        return _binary(tr, node, "div", 1.0, x)
    raise Unsupported(f"exponent {e} (kopt has x^-1, x^-0.5, x^0.5, x^1, x^2, x^3)")


# --- helpers of the handlers -------------------------------------------------

def _elementwise_input(tr, node, dtype: str) -> Value:
    v = tr.cast(tr.tensor(node.args[0], "input"), dtype)
    if v.shape != node_shape(node):
        raise Unsupported("the input's shape differs from the result's")
    return v


def _arg(node, i: int, name: str, default):
    return node.args[i] if len(node.args) > i else node.kwargs.get(name, default)


def _f32_op(tr, kop: str, a: Value, b: Value) -> Value:
    return tr.emit(f"kopt.{kop} {a.ssa}, {b.ssa} : {a.type}, {b.type} -> "
                   f"{tensor_type(a.kshape, 'f32')}", a.kshape, a.shape, "f32")


def _f32_unary(tr, kop: str, a: Value) -> Value:
    return tr.emit(f"kopt.{kop} {a.ssa} : {a.type}", a.kshape, a.shape, "f32")


_COPY_KWARGS = {"dtype", "layout", "device", "memory_format", "pin_memory",
                "non_blocking"}


@handles(aten._to_copy.default)
def _to_copy(tr, node):
    extra = set(node.kwargs) - _COPY_KWARGS
    if extra or len(node.args) != 1:
        raise Unsupported(f"arguments {sorted(extra) or node.args[1:]}")
    fmt = node.kwargs.get("memory_format")
    if fmt not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"memory_format {fmt}")
    layout = node.kwargs.get("layout")
    if layout not in (None, torch.strided):
        raise Unsupported(f"layout {layout}")
    src = node_val(node.args[0])
    dev = node.kwargs.get("device")
    if dev is not None and src is not None and torch.device(dev) != src.device:
        raise Unsupported("a copy to another device")
    return tr.cast(tr.tensor(node.args[0]), node_dtype(node))


@handles(prims.convert_element_type.default)
def _convert(tr, node):
    return tr.cast(tr.tensor(node.args[0]), node_dtype(node))


_VIEWS = [aten.view.default, aten._unsafe_view.default, aten.reshape.default,
          aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims,
          aten.unsqueeze.default, aten.alias.default, aten.clone.default,
          aten.detach.default, aten.expand.default]


@handles(*_VIEWS)
def _view(tr, node):
    v = tr.value(node.args[0], "input")
    shape = node_shape(node)
    if isinstance(v, Transposed):
        raise Unsupported("a view of a transposed tensor")
    if not isinstance(v, Value):
        raise Unsupported("the input is not a tensor")
    if node.target is aten.expand.default and tuple(shape) != v.shape:
        raise Unsupported("expand that broadcasts (kopt broadcasts in the op "
                          "that reads it)")
    if node.target is aten.clone.default:
        fmt = node.kwargs.get("memory_format")
        if fmt not in (None, torch.contiguous_format, torch.preserve_format):
            raise Unsupported(f"memory_format {fmt}")
    v.usable("the input", tr.canon)
    if tr.canon(shape) != v.kshape:
        raise Unsupported(f"the view {list(v.shape)} -> {list(shape)} changes the "
                          f"rows kopt sees ({list(v.kshape)} -> "
                          f"{list(tr.canon(shape))}); kopt has no reshape")
    return Value(v.ssa, v.kshape, shape, v.dtype)


@handles(aten.t.default, aten.transpose.int, aten.permute.default)
def _transpose(tr, node):
    v = tr.tensor(node.args[0], "input")
    if len(v.shape) != 2:
        raise Unsupported(f"a transpose of a rank-{len(v.shape)} tensor")
    if node.target is aten.transpose.int:
        dims = sorted(d % 2 for d in node.args[1:3])
        if dims != [0, 1]:
            return v
    if node.target is aten.permute.default:
        perm = [d % 2 for d in node.args[1]]
        if perm == [0, 1]:
            return v
    return Transposed(v, (v.shape[1], v.shape[0]))


def _matmul_operand(tr, arg, what):
    v = tr.value(arg, what)
    if isinstance(v, Transposed):
        return v.base, True
    if not isinstance(v, Value) or len(v.shape) != 2:
        raise Unsupported(f"{what} is not a 2-D tensor")
    return v.usable(what, tr.canon), False


def _matmul(tr, node, a_arg, b_arg, out_dtype) -> Value:
    a, ta = _matmul_operand(tr, a_arg, "A")
    b, tb = _matmul_operand(tr, b_arg, "B")
    if a.dtype != b.dtype:
        raise Unsupported(f"operands of two dtypes ({a.dtype}, {b.dtype})")
    attrs = [n for n, on in (("transpose_a", ta), ("transpose_b", tb),
                             ("tf32", a.dtype == "f32" and tr.allow_tf32)) if on]
    m = a.shape[1] if ta else a.shape[0]
    n = b.shape[0] if tb else b.shape[1]
    attr = f" {{{', '.join(attrs)}}}" if attrs else ""
    return tr.emit(f"kopt.matmul {a.ssa}, {b.ssa}{attr} : {a.type}, {b.type} -> "
                   f"{tensor_type((m, n), out_dtype)}", (m, n), (m, n), out_dtype)


@handles(aten.mm.default)
def _mm(tr, node):
    return _matmul(tr, node, node.args[0], node.args[1], node_dtype(node))


@handles(aten.addmm.default)
def _addmm(tr, node):
    if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
        raise Unsupported("beta or alpha other than 1")
    out_dtype = node_dtype(node)
    acc = _matmul(tr, node, node.args[1], node.args[2], "f32")
    bias = _operand(tr, node.args[0], acc.shape, "bias")
    if isinstance(bias, Scalar):
        raise Unsupported("a number as the bias")
    bias = tr.cast(bias, "f32")
    s = tr.emit(f"kopt.add {acc.ssa}, {bias.ssa} : {acc.type}, {bias.type} -> "
                f"{acc.type}", acc.kshape, acc.shape, "f32")
    return tr.cast(s, out_dtype)


@handles(_getitem)
def _item(tr, node):
    src = tr.value(node.args[0], "input")
    if isinstance(src, LayerNormResult) and node.args[1] == 0:
        return src.out
    raise Unsupported("getitem of a value kopt does not compute")


def rmsnorm_reference(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Hugging Face's RMSNorm without its weight, as PyTorch computes it: in
    f32, ``x * rsqrt(mean(x^2, -1) + eps)``, rounded once to x's dtype. The
    pattern pass (patterns.py) puts this in the graph for the matched ops; it
    runs when its node stays with PyTorch."""
    h = x.to(torch.float32)
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return y.to(x.dtype)




#: Targets without kopt ops of their own (views, transposes, getitem).
VIEW_TARGETS = set(_VIEWS) | {aten.t.default, aten.transpose.int,
                              aten.permute.default, _getitem}


#: Targets that compute elementwise on one shape (with broadcast inputs) or
#: view without changing it: what a :class:`Coalesced` partition may hold.
ELEMENTWISE_TARGETS = {
    aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar,
    aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar,
    aten.maximum.default, aten.minimum.default, aten.rsub.Scalar,
    aten.rsub.Tensor, aten.neg.default, aten.exp.default, aten.abs.default,
    aten.sqrt.default, aten.rsqrt.default, aten.tanh.default,
    aten.sigmoid.default, aten.relu.default, aten.silu.default,
    aten.gelu.default, aten.reciprocal.default, aten.pow.Tensor_Scalar,
    aten._to_copy.default, prims.convert_element_type.default,
    aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
    aten.hardtanh.default, aten.leaky_relu.default, aten.hardswish.default,
    aten.hardsigmoid.default, aten.log.default, aten.log1p.default,
    aten.softplus.default, aten.mish.default, aten.alias.default, aten.clone.default,
    aten.detach.default, aten.view.default, aten._unsafe_view.default,
    aten.reshape.default, aten.expand.default}


def translate(gm: torch.fx.GraphModule, name: str, allow_tf32: bool) -> Function:
    """Translates one partition; raises NodeUnsupported naming the node that
    kopt cannot compute, or Unsupported for the partition as a whole."""
    return Translator(gm, name, allow_tf32).run()


# The handlers of activations (activations.py) and of reductions and norms
# (norms.py) register in HANDLERS when imported; they use the helpers above.
from . import activations, norms  # noqa: E402,F401
