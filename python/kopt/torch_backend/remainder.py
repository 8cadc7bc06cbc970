"""PyTorch's remainder compiled by Inductor (the ``remainder="inductor"``
option).

After kopt's partitions are installed, the ATen ops left in the graph are
grouped into maximal acyclic groups (torch.fx's CapabilityBasedPartitioner over
every op that is not a kopt partition's output), and each group with at least
one compute op is compiled by Inductor's graph compiler
(``torch._inductor.compile_fx.compile_fx_inner``: what torch.compile's default
backend runs after AOT autograd) on the fake tensors the trace recorded. Each
group then runs as one call of its compiled code: Inductor fuses its
elementwise ops, reductions and views as it would in a graph of its own. With
``choose="measure"`` each group's code is timed against the group's ATen ops
in eager at its first call, as kopt's partitions are (choose.py), and the
faster runs from then on: Inductor's code is not always faster (depthwise
convolutions, pools). A group Inductor fails to compile runs in eager, with a
warning naming the cause.
"""

from __future__ import annotations

import contextlib
import operator
import warnings
from typing import Callable, List, Optional

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule

from . import choose, partition
from . import translate as tr


class _Remainder(OperatorSupportBase):
    """Every ATen op but the getitems that unpack a kopt partition's outputs."""

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem and node.args[0].op == "call_module":
            return False
        return True


def groups(gm: torch.fx.GraphModule) -> List[List[torch.fx.Node]]:
    """The remainder's groups with at least one compute op, each in graph
    order."""
    proposals = CapabilityBasedPartitioner(
        gm, _Remainder(), allows_single_node_partition=True).propose_partitions()
    order = {n: k for k, n in enumerate(gm.graph.nodes)}
    out = []
    for part in proposals:
        nodes = sorted(part.nodes, key=order.__getitem__)
        if any(n.target not in tr.VIEW_TARGETS and n.target is not
               torch.ops.aten.sym_size.int for n in nodes):
            out.append(nodes)
    out.sort(key=lambda nodes: order[nodes[0]])
    return out


class InductorGroup(torch.nn.Module):
    """One group of the remainder: Inductor's compiled code, or the group's
    ATen ops in eager when Inductor failed (``fallback_reason``)."""

    def __init__(self, sub: torch.fx.GraphModule, compiled: Optional[Callable],
                 fallback_reason: Optional[str], name: str = "inductor_group",
                 measure: Optional[dict] = None):
        super().__init__()
        self.sub = sub
        self.compiled = compiled
        self.fallback_reason = fallback_reason
        self.name = name
        # measure: {"runs", "graphs", "on_choice"}: at the first GPU call,
        # Inductor's code is timed against the group's ATen ops in eager
        # (choose.measure) and the faster runs from then on; None: Inductor's.
        self.measure = measure
        self.choice: Optional[choose.Choice] = None
        # Inductor's code asserts the strides the trace recorded for its
        # inputs; a tensor made elsewhere (PyTorch's kernel choosing another
        # layout, another group's padded output) may have others.
        self._strides = []
        for n in sub.graph.nodes:
            if n.op == "placeholder":
                v = n.meta.get("val")
                self._strides.append(tuple(v.stride()) if isinstance(v, torch.Tensor)
                                     else None)
        # And its outputs get the strides the trace recorded for them, which
        # the nodes after the group (kopt's partitions among them) were traced
        # and compiled for: Inductor, compiling the group alone, may lay an
        # output out otherwise (a convolution's channels-last).
        out = next(n for n in sub.graph.nodes if n.op == "output")
        self._out_strides = []
        for a in out.args[0]:
            v = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            self._out_strides.append(tuple(v.stride()) if isinstance(v, torch.Tensor)
                                     else None)

    def forward(self, *args):
        if self.compiled is None:
            return tuple(self.sub(*args))
        if self.choice is None and self.measure is not None:
            self._choose(args)
        if self.choice is not None and self.choice.impl == "eager":
            return tuple(self.sub(*args))
        return self.run_inductor(args)

    def run_inductor(self, args):
        args = list(args)
        for i, want in enumerate(self._strides):
            a = args[i]
            if want is not None and isinstance(a, torch.Tensor) and a.stride() != want:
                args[i] = torch.empty_strided(a.shape, want, dtype=a.dtype,
                                              device=a.device).copy_(a)
        outs = list(self.compiled(args))
        for i, want in enumerate(self._out_strides):
            o = outs[i] if i < len(outs) else None
            if want is not None and isinstance(o, torch.Tensor) and o.stride() != want:
                outs[i] = torch.empty_strided(o.shape, want, dtype=o.dtype,
                                              device=o.device).copy_(o)
        return tuple(outs)

    def _choose(self, args):
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        if device is None or device.type != "cuda" or \
                torch.cuda.is_current_stream_capturing():
            return  # nothing to time here: Inductor's code, choose later
        ind_ms, eager_ms, bad = choose.measure(
            lambda: self.run_inductor(args), lambda: tuple(self.sub(*args)), device,
            self.measure["runs"], self.measure["graphs"])
        self.decide(ind_ms, eager_ms, bad)

    def decide(self, ind_ms, eager_ms, bad) -> None:
        """Inductor's code unless eager is more than 2% faster, or when the
        two disagree (``bad``: why)."""
        self.choice = choose.settle(ind_ms, eager_ms, bad, "inductor", "eager",
                                    f"Inductor's code of {self.name} disagrees",
                                    "the group runs in eager", ("Inductor", "eager"))
        on_choice = self.measure.get("on_choice") if self.measure else None
        if on_choice is not None:
            on_choice(self.name, self.choice)


def inductor_compile(sub: torch.fx.GraphModule) -> Callable:
    """Inductor's compiled code of ``sub`` (an ATen graph returning a tuple,
    with meta['val'] on its placeholders): a callable taking a list of
    inputs."""
    from torch._guards import detect_fake_mode
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.utils import BoxedBool
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch._guards import TracingContext, tracing
    example = [n.meta["val"] for n in sub.graph.nodes if n.op == "placeholder"]
    fake_mode = detect_fake_mode(example)
    # A tracing context of the group's own: the enclosing graph's (AOT
    # autograd's) describes other inputs and outputs, and Inductor reads it
    # (static inputs, output strides) and writes to it.
    with tracing(TracingContext(fake_mode)):
        # Inductor's lowerings expect its decompositions applied first (as
        # compile_fx's own AOT autograd pass applies them).
        with fake_mode or contextlib.nullcontext():
            decomposed = make_fx(sub, decomposition_table=select_decomp_table())(*example)
        # cudagraphs: Inductor's own CUDA graphs stay off (the backend records
        # the whole forward when asked); its post-compile step requires the flag.
        return compile_fx_inner(decomposed, example, is_inference=True,
                                cudagraphs=BoxedBool(False))


def compile_groups(gm: torch.fx.GraphModule,
                   compile_fn: Optional[Callable[[torch.fx.GraphModule], Callable]] = None,
                   measure: Optional[dict] = None) -> List[InductorGroup]:
    """Replaces each group of ``gm``'s remainder by a call of its compiled
    code (``compile_fn(sub)``, a callable on a list of inputs; default
    :func:`inductor_compile`), measured against eager at its first call when
    ``measure`` is given (InductorGroup); returns the
    group modules in graph order."""
    compile_fn = compile_fn or inductor_compile
    found = groups(gm)
    plans, modules = [], []
    for k, nodes in enumerate(found):
        sub, ins, outs = fuse_as_graphmodule(gm, nodes, f"inductor_group_{k}",
                                             always_return_tuple=True)
        compiled, reason = None, None
        try:
            compiled = compile_fn(sub)
        except Exception as e:  # noqa: BLE001 - any failure of Inductor's
            reason = _reason(e)
            warnings.warn(f"kopt: Inductor could not compile a group of "
                          f"{len(nodes)} ops; it runs in eager: {reason}")
        plans.append((nodes, sub, ins, outs, None))
        modules.append(InductorGroup(sub, compiled, reason, f"inductor_group_{k}",
                                     measure))
    partition.install(gm, plans, modules, prefix="inductor_group")
    return modules


def _reason(e: BaseException) -> str:
    """The first line of an exception, with where it was raised when it says
    nothing (a bare assert)."""
    text = f"{type(e).__name__}: {e}".splitlines()[0][:400]
    if not str(e).strip():
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        if tb:
            text += f" (at {tb[-1].filename}:{tb[-1].lineno})"
    return text
