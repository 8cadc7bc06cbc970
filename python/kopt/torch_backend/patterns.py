"""Graph rewrites before partitioning: ATen subgraphs that are one kopt op.

Hugging Face's RMSNorm (``LlamaRMSNorm``, ``Qwen3RMSNorm``, ``MistralRMSNorm``,
...) reaches the backend as

    h = _to_copy(x, float32)            (absent when x is float32)
    r = rsqrt(add(mean(pow(h, 2), [-1], True), eps))
    y = mul(h, r)
    y = _to_copy(y, x.dtype)            (absent when x is float32)
    out = mul(weight, y)

and kopt has no reshape, so the keepdim mean cannot be broadcast back inside a
kopt function. The pass replaces ``h ... y`` by one node calling
:func:`kopt.torch_backend.translate.rmsnorm_reference` (the same formula in
PyTorch, which runs when the node stays with PyTorch), which translates to
``kopt.rmsnorm`` without weight: f32 sum of squares, ``rsqrt(ss / N + eps)``,
one rounding to x's dtype, as the matched ops round. ``mul(weight, y)`` stays a
``kopt.mul``, so the result is rounded exactly where Hugging Face rounds it.
"""

from __future__ import annotations

import torch
import torch.fx

from .translate import _last_dim, node_val, rmsnorm_reference

aten = torch.ops.aten


def _dtype(node):
    val = node_val(node)
    return val.dtype if isinstance(val, torch.Tensor) else None


def _is_cast(node, dtype=None) -> bool:
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target is aten._to_copy.default:
        if set(node.kwargs) - {"dtype"} or len(node.args) != 1:
            return False
    elif node.target is not torch.ops.prims.convert_element_type.default:
        return False
    return dtype is None or _dtype(node) == dtype


def _call(node, target) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" \
        and node.target is target


def _match_rstd(r, h):
    """eps when ``r`` is rsqrt(mean(pow(h, 2), [-1], True) + eps), else None."""
    if not _call(r, aten.rsqrt.default):
        return None
    a = r.args[0]
    if not _call(a, aten.add.Tensor) and not _call(a, aten.add.Scalar):
        return None
    if a.kwargs.get("alpha", 1) != 1 or len(a.args) != 2:
        return None
    m, eps = a.args
    if isinstance(m, (int, float)):
        m, eps = eps, m
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        return None
    if not _call(m, aten.mean.dim) or m.kwargs.get("dtype") is not None:
        return None
    p, dims = m.args[0], m.args[1]
    keepdim = m.args[2] if len(m.args) > 2 else m.kwargs.get("keepdim", False)
    shape = getattr(node_val(h), "shape", None)
    if shape is None or not keepdim or not _last_dim(dims, len(shape)):
        return None
    if not _call(p, aten.pow.Tensor_Scalar) or p.args[0] is not h or p.args[1] != 2:
        return None
    return float(eps)


def fuse_rmsnorm(gm: torch.fx.GraphModule) -> int:
    """Rewrites each RMSNorm of the pattern above; returns how many."""
    count = 0
    for y in list(gm.graph.nodes):
        if not _call(y, aten.mul.Tensor) or len(y.args) != 2:
            continue
        for h, r in (y.args, y.args[::-1]):
            if not isinstance(h, torch.fx.Node):
                continue
            eps = _match_rstd(r, h)
            # 16-bit h: PyTorch rounds every step to 16 bits; only the f32
            # computation is one kopt.rmsnorm.
            if eps is None or _dtype(h) != _dtype(y) or _dtype(h) != torch.float32:
                continue
            x, out = h, y
            # h = float32 copy of a 16-bit x, and y cast back to x's dtype.
            if _is_cast(h, torch.float32) and _dtype(h.args[0]) in (
                    torch.float16, torch.bfloat16):
                back = [u for u in y.users if _is_cast(u, _dtype(h.args[0]))]
                if len(y.users) == 1 and back:
                    x, out = h.args[0], back[0]
            with gm.graph.inserting_before(out):
                node = gm.graph.call_function(rmsnorm_reference, (x, eps))
            node.meta = dict(out.meta)
            out.replace_all_uses_with(node)
            count += 1
            break
    if count:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return count
