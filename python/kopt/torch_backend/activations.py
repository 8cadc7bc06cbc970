"""Translations of clamps and activations that have no kopt op of their own
(clamp, hardtanh, leaky_relu, hardswish, hardsigmoid, softplus, mish), into
kopt's elementwise ops. Each rounds where PyTorch's CUDA kernel does (ATen's
Activation*.cu and UnaryOpsKernel's clamp): a clamp selects, so it is exact in
any dtype once its bounds are; the others compute in f32 (opmath) and round
once. Registered in translate.HANDLERS on import (translate.py imports this
module)."""

from __future__ import annotations

import math

import torch

from .translate import (Unsupported, Value, _arg, _elementwise_input, _f32_op,
                        _f32_unary, _round_to, aten, handles, node_dtype)


def _bound(value, what: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"{what} {value!r} is not a number")
    if math.isnan(float(value)):
        raise Unsupported(f"{what} is NaN (CUDA's fmaxf/fminf ignore it, kopt's "
                          f"max/min propagate it)")
    return float(value)


def _fits(value: float, dtype: str, what: str) -> float:
    """``value`` converted to ``dtype`` as PyTorch's checked ``Scalar::to``
    converts it, which refuses a finite number beyond the dtype's range (eager
    raises; kopt leaves the op to PyTorch, which raises the same)."""
    r = _round_to(value, dtype)
    if math.isinf(r) and math.isfinite(value):
        raise Unsupported(f"{what} {value!r} overflows {dtype} (PyTorch refuses it)")
    return r


def _clamp_value(tr, v: Value, lo, hi) -> Value:
    """min(max(v, lo), hi) in v's dtype, with the bounds converted to it as
    PyTorch's clamp converts them (``Scalar::to<scalar_t>``); NaN stays NaN."""
    for kop, b in (("max", lo), ("min", hi)):
        if b is None:
            continue
        c = tr.scalar(_fits(b, v.dtype, "min" if kop == "max" else "max"), v.dtype)
        v = tr.emit(f"kopt.{kop} {v.ssa}, {c.ssa} : {v.type}, {c.type} -> {v.type}",
                    v.kshape, v.shape, v.dtype)
    return v



@handles(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
         aten.hardtanh.default)
def _clamp(tr, node):
    if node.target is aten.hardtanh.default:  # ATen's hardtanh is clamp
        lo, hi = _arg(node, 1, "min_val", -1.0), _arg(node, 2, "max_val", 1.0)
    elif node.target is aten.clamp_min.default:
        lo, hi = _arg(node, 1, "min", None), None
    elif node.target is aten.clamp_max.default:
        lo, hi = None, _arg(node, 1, "max", None)
    else:
        lo, hi = _arg(node, 1, "min", None), _arg(node, 2, "max", None)
    lo, hi = _bound(lo, "min"), _bound(hi, "max")
    if lo is None and hi is None:
        raise Unsupported("a clamp without bounds")
    return _clamp_value(tr, _elementwise_input(tr, node, node_dtype(node)), lo, hi)


@handles(aten.leaky_relu.default)
def _leaky_relu(tr, node):
    # PyTorch: x > 0 ? x : x * slope in f32. Here max(x, 0) + min(x, 0) * slope:
    # the same value for every x (NaN included) but the sign of a zero result
    # (-0 gives +0).
    slope = _bound(_arg(node, 1, "negative_slope", 0.01), "negative_slope")
    if not math.isfinite(slope):
        raise Unsupported(f"negative_slope {slope}")
    slope = _fits(slope, "f32", "negative_slope")
    out = node_dtype(node)
    x = _elementwise_input(tr, node, "f32")
    zero = tr.scalar(0.0, "f32")
    pos = _f32_op(tr, "max", x, zero)
    neg = _f32_op(tr, "mul", _f32_op(tr, "min", x, zero), tr.scalar(slope, "f32"))
    return tr.cast(_f32_op(tr, "add", pos, neg), out)


def _relu6_of_x_plus_3(tr, x: Value) -> Value:
    t = _f32_op(tr, "add", x, tr.scalar(3.0, "f32"))
    return _clamp_value(tr, t, 0.0, 6.0)


def _one_sixth() -> float:
    return float(torch.tensor(1.0, dtype=torch.float32) / 6.0)  # 1.0f / 6.0f


@handles(aten.hardswish.default)
def _hardswish(tr, node):
    # PyTorch's CUDA kernel (ActivationHardswishKernel.cu): x * min(max(x + 3, 0), 6)
    # * (1.0f / 6.0f) in f32, multiplied left to right. (Its CPU kernel divides by 6
    # instead, which differs in the last bit for some x; kopt runs on CUDA.)
    x = _elementwise_input(tr, node, "f32")
    m = _f32_op(tr, "mul", x, _relu6_of_x_plus_3(tr, x))
    return tr.cast(_f32_op(tr, "mul", m, tr.scalar(_one_sixth(), "f32")), node_dtype(node))


@handles(aten.hardsigmoid.default)
def _hardsigmoid(tr, node):
    # PyTorch (ActivationHardsigmoidKernel.cu): min(max(x + 3, 0), 6) * (1.0f / 6.0f).
    x = _elementwise_input(tr, node, "f32")
    return tr.cast(_f32_op(tr, "mul", _relu6_of_x_plus_3(tr, x), tr.scalar(_one_sixth(), "f32")),
                   node_dtype(node))


def _softplus_f32(tr, x: Value, beta: float) -> Value:
    """log(1 + exp(beta * x)) / beta as max(x, 0) + log1p(exp(-|beta * x|)) /
    beta: no overflow for large beta * x (exp(-|bx|) <= 1, and max(x, 0) needs
    no division), the same value to f32 rounding."""
    bx = x if beta == 1.0 else _f32_op(tr, "mul", x, tr.scalar(beta, "f32"))
    pos = _f32_op(tr, "max", x, tr.scalar(0.0, "f32"))
    tail = _f32_unary(tr, "log1p", _f32_unary(tr, "exp", _f32_unary(
        tr, "neg", _f32_unary(tr, "abs", bx))))
    if beta != 1.0:
        tail = _f32_op(tr, "div", tail, tr.scalar(beta, "f32"))
    return _f32_op(tr, "add", pos, tail)


@handles(aten.softplus.default)
def _softplus(tr, node):
    # PyTorch (ActivationSoftplusKernel.cu): bx > threshold ? x : log1p(exp(bx)) / beta,
    # in f32. Beyond bx = 17, log1p(exp(-bx)) / beta is below half an f32 ulp of x,
    # so the formula above gives x there too; a lower threshold cuts off where it
    # does not, and stays with PyTorch. Above bx = 88, exp(bx) overflows f32 in
    # PyTorch's formula (inf where the value is x): a threshold that lets it stays
    # with PyTorch too.
    beta = _bound(_arg(node, 1, "beta", 1.0), "beta")
    threshold = _bound(_arg(node, 2, "threshold", 20.0), "threshold")
    if not (math.isfinite(beta) and beta > 0):
        raise Unsupported(f"beta {beta} (kopt takes beta > 0)")
    beta = _fits(beta, "f32", "beta")
    if beta == 0.0:
        raise Unsupported(f"beta {beta!r} is 0 in f32")
    if threshold < 17.0:
        raise Unsupported(f"threshold {threshold} below 17 (where x and softplus(x) "
                          f"still differ in f32)")
    if threshold > 88.0:
        raise Unsupported(f"threshold {threshold} above 88 (where PyTorch's exp(beta * "
                          f"x) overflows f32)")
    x = _elementwise_input(tr, node, "f32")
    return tr.cast(_softplus_f32(tr, x, beta), node_dtype(node))


@handles(aten.mish.default)
def _mish(tr, node):
    # PyTorch (ActivationMishKernel.cu): x * tanh(log1p(exp(x))) in f32, the same
    # formula here: where exp(x) overflows to inf, tanh(inf) = 1 gives x, as there.
    x = _elementwise_input(tr, node, "f32")
    sp = _f32_unary(tr, "log1p", _f32_unary(tr, "exp", x))
    return tr.cast(_f32_op(tr, "mul", x, _f32_unary(tr, "tanh", sp)), node_dtype(node))
