"""Translations of reductions over the last dim, softmax and the norms
(layer norm, batch norm in eval, the RMSNorm pattern) into kopt's row ops and
elementwise ops. Registered in translate.HANDLERS on import (translate.py
imports this module)."""

from __future__ import annotations

from .translate import (LayerNormResult, Unsupported, Value, _arg, _f32, _f32_op,
                        _f32_unary, _getitem, _last_dim, aten, handles, node_dtype,
                        node_shape, rmsnorm_reference, tensor_type, f32_literal)


def _reduce(tr, node, kind):
    x = tr.tensor(node.args[0], "input")
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if not _last_dim(dims, len(x.shape)):
        raise Unsupported(f"a reduction over dims {dims} (kopt reduces the last)")
    if node.kwargs.get("dtype") is not None:
        raise Unsupported("dtype= on a reduction")
    out_dtype = node_dtype(node)
    kshape = x.kshape[:-1]
    return tr.emit(f"kopt.reduce {kind} {x.ssa} : {x.type} -> "
                   f"{tensor_type(kshape, out_dtype)}", kshape, node_shape(node), out_dtype)


@handles(aten.sum.dim_IntList)
def _sum(tr, node):
    return _reduce(tr, node, "sum")


@handles(aten.mean.dim)
def _mean(tr, node):
    return _reduce(tr, node, "mean")


@handles(aten.amax.default)
def _amax(tr, node):
    return _reduce(tr, node, "max")


@handles(aten._softmax.default)
def _softmax(tr, node):
    x = tr.tensor(node.args[0], "input")
    if not _last_dim(node.args[1], len(x.shape)):
        raise Unsupported(f"softmax over dim {node.args[1]} (kopt's is over the last)")
    v = tr.cast(x, node_dtype(node))  # half_to_float: f32 softmax of the f32 input
    return tr.emit(f"kopt.softmax {v.ssa} : {v.type}", v.kshape, v.shape, v.dtype)


def _norm_param(tr, arg, x: Value, what):
    if arg is None:
        return ""
    w = tr.tensor(arg, what)
    if w.shape != (x.shape[-1],):
        raise Unsupported(f"{what} of shape {list(w.shape)}")
    if w.dtype != x.dtype:
        raise Unsupported(f"{what} dtype {w.dtype} differs from the input's {x.dtype}")
    return f" {what}({w.ssa} : {w.type})"


def _eps(value) -> str:
    eps = float(value)
    if not 0.0 <= eps <= 1.0:
        raise Unsupported(f"eps {eps} (kopt takes eps in [0, 1])")
    return f" eps = {f32_literal(eps)}"


@handles(aten.native_layer_norm.default)
def _layer_norm(tr, node):
    x = tr.tensor(node.args[0], "input")
    normalized = list(node.args[1])
    if len(x.shape) < 1 or normalized != [x.shape[-1]]:
        raise Unsupported(f"normalized_shape {normalized} (kopt normalizes the last dim)")
    _only_output_used(node, "mean or rstd")
    w = _norm_param(tr, node.args[2], x, "weight")
    b = _norm_param(tr, node.args[3], x, "bias")
    out = tr.emit(f"kopt.layernorm {x.ssa}{w}{b}{_eps(node.args[4])} : {x.type}",
                  x.kshape, x.shape, x.dtype)
    return LayerNormResult(out)


def _only_output_used(node, what: str) -> None:
    for user in node.users:
        if user.users and (user.target is not _getitem or user.args[1] != 0):
            raise Unsupported(f"the {what} result is used (kopt returns the "
                              f"normalized tensor only)")


@handles(aten._native_batch_norm_legit_no_training.default, aten.native_batch_norm.default)
def _batch_norm_inference(tr, node):
    # Batch norm with running statistics (a model in eval()), as PyTorch's CUDA
    # kernel (Normalization.cuh, batch_norm_elementwise) computes it in f32:
    # invstd = 1 / sqrt(running_var + eps); ((x - mean) * invstd) * weight + bias.
    # Channels are dim 1: a row vector of an [N, C] input; an input of higher
    # rank stays with PyTorch.
    x = tr.tensor(node.args[0], "input")
    if len(x.shape) != 2:
        raise Unsupported(f"batch norm of a rank-{len(x.shape)} input (kopt takes "
                          f"2-D [N, C] inputs)")
    _only_output_used(node, "save_mean or save_invstd")
    c = x.shape[1]
    if node.target is aten.native_batch_norm.default:  # (..., training, momentum, eps)
        if _arg(node, 5, "training", True) is not False:
            raise Unsupported("batch norm in training (batch statistics)")
        eps = float(_arg(node, 7, "eps", 1e-5))
    else:  # _native_batch_norm_legit_no_training: (..., momentum, eps)
        eps = float(_arg(node, 6, "eps", 1e-5))
    if not 0.0 <= eps <= 1.0:
        raise Unsupported(f"eps {eps}")
    vecs = []
    for i, what in ((1, "weight"), (2, "bias"), (3, "running_mean"), (4, "running_var")):
        arg = node.args[i] if len(node.args) > i else None
        if arg is None:
            if what.startswith("running"):
                raise Unsupported(f"no {what}")
            vecs.append(None)
            continue
        v = tr.tensor(arg, what)
        if v.shape != (c,):
            raise Unsupported(f"{what} of shape {list(v.shape)}")
        vecs.append(tr.cast(v, "f32"))
    w, b, mean, var = vecs
    xf = tr.cast(x, "f32")
    ve = _f32_op(tr, "add", var, tr.scalar(_f32(eps), "f32"))
    sd = _f32_unary(tr, "sqrt", ve)
    one = tr.scalar(1.0, "f32")
    invstd = tr.emit(f"kopt.div {one.ssa}, {sd.ssa} : {one.type}, {sd.type} -> {sd.type}",
                     sd.kshape, sd.shape, "f32")
    # [N, C] op [C]: the result has the input's shape (a row-vector broadcast)
    y = _f32_op(tr, "mul", _f32_op(tr, "sub", xf, mean), invstd)
    if w is not None:
        y = _f32_op(tr, "mul", y, w)
    if b is not None:
        y = _f32_op(tr, "add", y, b)
    return LayerNormResult(tr.cast(y, x.dtype))  # the output has the input's dtype



@handles(rmsnorm_reference)
def _rmsnorm(tr, node):
    x = tr.tensor(node.args[0], "input")
    if x.dtype != node_dtype(node):
        raise Unsupported("the result dtype differs from the input's")
    return tr.emit(f"kopt.rmsnorm {x.ssa}{_eps(node.args[1])} : {x.type}",
                   x.kshape, x.shape, x.dtype)
