"""Partitioning an ATen graph into kopt functions and PyTorch's remainder.

torch.fx's CapabilityBasedPartitioner proposes maximal acyclic groups of the
nodes kopt has translations for (translate.HANDLERS, float dtypes, static
shapes). Each group is then translated; a node the translator cannot express
(a broadcast kopt cannot represent, a view that changes the rows, an
unsupported argument) is rejected with its reason and the groups are proposed
again without it, until every group translates. Groups with fewer than
``min_partition_ops`` compute ops (views and getitem do not count) stay with
PyTorch. Each remaining group becomes one call of a :class:`KoptPartition`.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.tools_common import legalize_graph
from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule

from . import translate as tr


@dataclass
class Plan:
    """The partitions of one graph (each: nodes, the sub-GraphModule with its
    original inputs/outputs, and the translated function) and the nodes left
    to PyTorch with the reason."""
    partitions: List[tuple] = field(default_factory=list)
    fallbacks: Dict[str, str] = field(default_factory=dict)  # node name -> reason


def _is_float_tensor(val) -> bool:
    return isinstance(val, torch.Tensor) and val.dtype in tr.DTYPES


def _static(val) -> bool:
    return all(isinstance(d, int) for d in val.shape)


def static_reason(node: torch.fx.Node) -> Optional[str]:
    """Why the partitioner must leave ``node`` out, from its target, dtypes and
    shapes alone (None when it may go to kopt)."""
    if node.op != "call_function":
        return None
    if node.target not in tr.HANDLERS:
        return "no kopt translation"
    vals = []
    for v in [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]:
        vals.extend(v if isinstance(v, (list, tuple)) else [v])
    for v in vals:
        if isinstance(v, torch.Tensor):
            if v.dtype not in tr.DTYPES:
                return f"dtype {v.dtype} (kopt computes float32, float16, bfloat16)"
            if not _static(v):
                return "symbolic shape"
            if v.numel() == 0:
                return "an empty tensor (kopt does not compile empty tensors)"
            if v.device.type != "cuda" and v.device.type != "meta":
                return f"a tensor on {v.device.type}"
        elif v is None and node.target is not tr._getitem:
            return "no shape metadata"
    return None


class _Support(OperatorSupportBase):
    def __init__(self, rejected: Dict[torch.fx.Node, str]):
        self.rejected = rejected

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function" or node in self.rejected:
            return False
        return static_reason(node) is None


def _compute_ops(nodes) -> int:
    return sum(1 for n in nodes if n.target not in tr.VIEW_TARGETS)


def untie_views(gm: torch.fx.GraphModule) -> None:
    """Gives each user of a view-like node (``t``, ``view``, ...) its own copy,
    so that a weight's ``t`` read by two matmuls in two partitions becomes a
    ``transpose_b`` in each instead of a transposed input to copy."""
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in tr.VIEW_TARGETS \
                or node.target is tr._getitem or len(node.users) < 2:
            continue
        for user in list(node.users)[1:]:
            with gm.graph.inserting_before(user):
                dup = gm.graph.node_copy(node)
            user.replace_input_with(node, dup)


def plan(gm: torch.fx.GraphModule, min_partition_ops: int,
         allow_tf32: bool, refuse: Optional[Dict[torch.fx.Node, str]] = None) -> Plan:
    """Proposes, translates and re-proposes until every partition translates;
    the nodes of ``refuse`` stay with PyTorch for the reason given."""
    rejected: Dict[torch.fx.Node, str] = dict(refuse or {})
    by_name = {n.name: n for n in gm.graph.nodes}
    result = Plan()
    for _ in range(len(by_name) + 1):
        partitioner = CapabilityBasedPartitioner(
            gm, _Support(rejected), allows_single_node_partition=True)
        proposals = partitioner.propose_partitions()
        done, small = [], {}
        retry = False
        for i, part in enumerate(proposals):
            order = {n: k for k, n in enumerate(gm.graph.nodes)}
            nodes = sorted(part.nodes, key=order.__getitem__)
            if _compute_ops(nodes) < max(1, min_partition_ops):
                for n in nodes:
                    small[n.name] = (f"in a partition of {_compute_ops(nodes)} "
                                     f"compute ops (min_partition_ops="
                                     f"{min_partition_ops})")
                continue
            sub, ins, outs = fuse_as_graphmodule(gm, nodes, f"kopt_partition_{i}",
                                                 always_return_tuple=True)
            try:
                fn = tr.translate(sub, f"partition_{i}", allow_tf32)
            except tr.NodeUnsupported as e:
                bad = by_name.get(e.node.name)
                if bad is None or bad in rejected:
                    raise AssertionError(f"kopt: translation failed at an unknown "
                                         f"node: {e}") from None
                rejected[bad] = e.reason
                retry = True
                break
            except tr.Unsupported as e:
                for n in nodes:
                    small[n.name] = str(e)
                continue
            done.append((nodes, sub, ins, outs, fn))
        if retry:
            continue
        result.partitions = done
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            if node in rejected:
                result.fallbacks[node.name] = rejected[node]
            elif node.name in small:
                result.fallbacks[node.name] = small[node.name]
            else:
                reason = static_reason(node)
                if reason is not None:
                    result.fallbacks[node.name] = reason
        return result
    raise AssertionError("kopt: partitioning did not converge")


MATMUL_TARGETS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


def split_matmuls(sub: torch.fx.GraphModule, min_partition_ops: int,
                  allow_tf32: bool) -> Optional[tuple]:
    """For a partition's graph that holds matmuls and other compute ops: a copy
    of it and the plan of that copy with the matmuls left to PyTorch (None when
    it has no matmul, nothing but matmuls, or no other op kopt would take)."""
    nodes = [n for n in sub.graph.nodes if n.op == "call_function"]
    matmuls = [n for n in nodes if n.target in MATMUL_TARGETS]
    if not matmuls or _compute_ops(nodes) == len(matmuls):
        return None
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(sub.graph, {}))
    copy = torch.fx.GraphModule(sub, graph)
    refuse = {n: "the split variant leaves matmuls to PyTorch"
              for n in copy.graph.nodes
              if n.op == "call_function" and n.target in MATMUL_TARGETS}
    inner = plan(copy, min_partition_ops, allow_tf32, refuse)
    if not inner.partitions:
        return None
    return copy, inner


def install(gm: torch.fx.GraphModule, partitions, modules,
            prefix: str = "kopt_partition") -> None:
    """Replaces each partition's nodes by a call of its module (an
    nn.Module returning a tuple of the partition's outputs), named
    ``<prefix>_<k>``."""
    moved: Dict[torch.fx.Node, torch.fx.Node] = {}  # an earlier partition's outputs
    for k, ((nodes, sub, ins, outs, fn), module) in enumerate(zip(partitions, modules)):
        name = f"{prefix}_{k}"
        gm.add_submodule(name, module)
        last = max(outs, key=list(gm.graph.nodes).index)
        with gm.graph.inserting_after(last):
            call = gm.graph.call_module(name, args=tuple(moved.get(n, n) for n in ins))
        with gm.graph.inserting_after(call):
            for i, out in enumerate(outs):
                item = gm.graph.call_function(tr._getitem, (call, i))
                item.meta = dict(out.meta)
                out.replace_all_uses_with(item, propagate_meta=False)
                moved[out] = item
        for n in reversed(nodes):
            gm.graph.erase_node(n)
    legalize_graph(gm)
    gm.graph.lint()
    gm.recompile()


def count_ops(nodes) -> collections.Counter:
    return collections.Counter(tr.op_name(n.target) for n in nodes
                               if n.op == "call_function")
