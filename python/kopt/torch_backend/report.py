"""What the backend did with each graph: ops seen, ops given to kopt, kernels
launched, fallbacks with their reasons (``kopt.torch_backend.report()``, or
``options={"report": True}`` to print each graph's as it is compiled)."""

from __future__ import annotations

import collections
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

_lock = threading.Lock()
_graphs: List["GraphReport"] = []


@dataclass
class GraphReport:
    name: str
    #: ATen ops of the graph as AOT autograd gave it, by op
    ops_seen: collections.Counter = field(default_factory=collections.Counter)
    #: ops inside kopt partitions (kopt.rmsnorm for the RMSNorm pattern)
    ops_kopt: collections.Counter = field(default_factory=collections.Counter)
    #: ops left to PyTorch, by (op, reason)
    fallbacks: collections.Counter = field(default_factory=collections.Counter)
    partitions: int = 0
    #: kopt kernel launches per call of the graph
    kopt_kernels: int = 0
    #: compute ops (not views) left to PyTorch: each is at least one launch
    pytorch_ops: int = 0
    #: partitions that run in PyTorch because kopt failed to compile them
    failed_partitions: List[str] = field(default_factory=list)
    whole_graph_fallback: Optional[str] = None
    #: partition name -> choose.Choice, as each partition's first call made it
    chosen: Dict[str, Any] = field(default_factory=dict)
    #: groups of the remainder compiled by Inductor (remainder="inductor"),
    #: and why those that run in eager failed
    inductor_groups: int = 0
    failed_groups: List[str] = field(default_factory=list)
    #: kernels compiled with copy = cp_async instead of TMA for CUDA graphs
    capturable_kernels: List[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"kopt torch.compile report: {self.name}"]
        if self.whole_graph_fallback:
            lines.append(f"  whole graph runs in PyTorch: {self.whole_graph_fallback}")
            return "\n".join(lines)
        seen = sum(self.ops_seen.values())
        lines.append(f"  ATen ops seen: {seen}; kopt partitions: {self.partitions}, "
                     f"{sum(self.ops_kopt.values())} ops, {self.kopt_kernels} kopt "
                     f"kernels per call; {self.pytorch_ops} compute ops left to PyTorch")
        if self.ops_kopt:
            lines.append("  given to kopt: " + ", ".join(
                f"{op} x{n}" for op, n in self.ops_kopt.most_common()))
        if self.fallbacks:
            lines.append("  left to PyTorch:")
            for (op, reason), n in self.fallbacks.most_common():
                lines.append(f"    {op} x{n}: {reason}")
        for failed in self.failed_partitions:
            lines.append(f"  compile failed, runs in PyTorch: {failed}")
        if self.capturable_kernels:
            lines.append(f"  for CUDA graphs, with cp_async copies instead of TMA: "
                         f"{', '.join(self.capturable_kernels)}")
        if self.inductor_groups:
            lines.append(f"  remainder: {self.inductor_groups} groups compiled by "
                         f"Inductor")
        for failed in self.failed_groups:
            lines.append(f"  Inductor failed, group runs in eager: {failed}")
        for name, choice in self.chosen.items():
            lines.append(f"  {name} runs {choice}")
        return "\n".join(lines)


class Report(list):
    """The graphs compiled since the last :func:`reset`, with totals."""

    def unsupported_ops(self) -> collections.Counter:
        total = collections.Counter()
        for g in self:
            for (op, _), n in g.fallbacks.items():
                total[op] += n
        return total

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self) or "kopt torch.compile report: no graphs"


def record(graph: GraphReport, echo: bool) -> None:
    with _lock:
        _graphs.append(graph)
    if echo:
        print(graph, file=sys.stderr)


def report() -> Report:
    """The reports of the graphs compiled since the last reset()."""
    with _lock:
        return Report(_graphs)


def reset() -> None:
    with _lock:
        _graphs.clear()
