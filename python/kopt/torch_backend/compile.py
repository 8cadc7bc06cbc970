"""Compiling one ATen inference graph: patterns, partitions, kopt kernels."""

from __future__ import annotations

import copy
import itertools
import os
import warnings
from typing import Any, Dict, List

import torch
import torch.fx
from torch._functorch.aot_autograd import make_boxed_func

from ..errors import KoptError
from . import module as km
from . import choose, partition, patterns, remainder
from . import translate as tr
from .cudagraphs import CudaGraphRunner
from .report import GraphReport, record

_counter = itertools.count()


def chip_of(device: torch.device) -> str:
    """The kopt chip name of a CUDA device: sm_90a on Hopper (its wgmma/TMA
    features), else sm_<major><minor>."""
    major, minor = torch.cuda.get_device_capability(device)
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def _cuda_device(gm) -> Any:
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            v = n.meta.get("val")
            if isinstance(v, torch.Tensor) and v.device.type == "cuda":
                return v.device
    return None


def _symbolic(gm) -> bool:
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.SymInt):
            return True
        if isinstance(v, torch.Tensor) and not all(isinstance(d, int) for d in v.shape):
            return True
    return False


def compile_static(gm: torch.fx.GraphModule, opts) -> torch.fx.GraphModule:
    """Rewrites ``gm`` (static shapes, meta['val'] on every node) in place:
    kopt partitions as submodules, the rest as it was."""
    rep = GraphReport(name=f"graph {next(_counter)}")
    rep.ops_seen = partition.count_ops(gm.graph.nodes)
    device = _cuda_device(gm)
    if device is None:
        rep.whole_graph_fallback = "no CUDA tensors among its inputs"
        warnings.warn(f"kopt: {rep.name} has no CUDA tensors; it runs in PyTorch")
        record(rep, opts.report)
        return gm
    chip = opts.chip
    if chip is None:
        chip = chip_of(device) if torch.cuda.is_available() else "sm_90a"
    allow_tf32 = (torch.backends.cuda.matmul.allow_tf32 if opts.allow_tf32 is None
                  else bool(opts.allow_tf32))
    gm.graph.eliminate_dead_code()  # e.g. native_layer_norm's unused mean and rstd
    patterns.fuse_rmsnorm(gm)
    partition.untie_views(gm)
    the_plan = partition.plan(gm, opts.min_partition_ops, allow_tf32)
    compile_options: Dict[str, Any] = {"chip": chip, "fuse": bool(opts.fuse)}
    for key in ("features", "opt_level", "schedule"):
        if getattr(opts, key) is not None:
            compile_options[key] = getattr(opts, key)
    if opts.tuning_db is not None and os.path.isfile(opts.tuning_db):
        compile_options["tuning_db"] = opts.tuning_db  # else: not written yet
    cache = opts.cache_path()
    modules: List[km.KoptPartition] = []
    for nodes, sub, ins, outs, fn in the_plan.partitions:
        compiled, reason = None, None
        try:
            compiled = km.compile_cached(fn.mlir, dict(compile_options, name=fn.name),
                                         cache)
            if opts.cudagraphs and opts.schedule is None:
                compiled = _capturable(fn, compiled, compile_options, cache, rep)
        except KoptError as e:
            reason = f"kopt could not compile it: {e}"
            warnings.warn(f"kopt: {rep.name}, {fn.name} ({len(nodes)} ops) runs in "
                          f"PyTorch: {reason}")
            rep.failed_partitions.append(f"{fn.name}: {e}")
        alt = "inductor" if opts.remainder == "inductor" else "pytorch"
        chooser = km.Chooser(opts.choose, opts.choose_runs, opts.tuning_db,
                             choose.workload_key(fn.mlir, chip, alt, fn.name), alt,
                             alt_compile=remainder.inductor_compile
                             if alt == "inductor" else None,
                             on_choice=rep.chosen.__setitem__,
                             graphs=bool(opts.cudagraphs))
        split = None
        if compiled is not None and opts.choose == "measure":
            split = _split_variant(sub, opts, allow_tf32, compile_options, cache)
        modules.append(km.KoptPartition(sub, fn, compiled, reason, chooser, split))
        if compiled is not None:
            rep.partitions += 1
            rep.ops_kopt.update(fn.ops)
            rep.kopt_kernels += compiled.launches
        else:
            for n in nodes:
                rep.fallbacks[(tr.op_name(n.target), "kopt failed to compile "
                               "its partition")] += 1
    by_name = {n.name: n for n in gm.graph.nodes}
    for name, reason in the_plan.fallbacks.items():
        node = by_name[name]
        if node.target not in tr.VIEW_TARGETS:
            rep.fallbacks[(tr.op_name(node.target), reason)] += 1
    partition.install(gm, the_plan.partitions, modules)
    _views_to_reshapes(gm)
    rep.pytorch_ops = sum(1 for n in gm.graph.nodes if n.op == "call_function"
                          and n.target not in tr.VIEW_TARGETS
                          and n.target is not torch.ops.aten.sym_size.int)
    if opts.remainder == "inductor":
        measure = None
        if opts.choose == "measure":
            measure = {"runs": opts.choose_runs, "graphs": bool(opts.cudagraphs),
                       "on_choice": rep.chosen.__setitem__}
        groups = remainder.compile_groups(gm, measure=measure)
        rep.inductor_groups = len(groups)
        rep.failed_groups = [g.fallback_reason for g in groups
                             if g.fallback_reason is not None]
    record(rep, opts.report)
    return gm


def _views_to_reshapes(gm: torch.fx.GraphModule) -> None:
    """PyTorch's remainder: aten.view asserts strides the trace predicted (an
    SDPA kernel chosen at run time may lay its output out otherwise); reshape
    is the same view when it can be and a copy when it cannot."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is torch.ops.aten.view.default:
            n.target = torch.ops.aten.reshape.default
    gm.recompile()


def _split_variant(sub, opts, allow_tf32, compile_options, cache):
    """The partition's graph with its matmuls left to PyTorch (cuBLAS) and its
    other ops in kopt partitions of their own, always run by kopt: the third
    candidate of the partition's measured choice (choose.SPLIT). None where
    the partition has no such variant or kopt cannot compile it."""
    found = partition.split_matmuls(sub, opts.min_partition_ops, allow_tf32)
    if found is None:
        return None
    copy, inner = found
    modules = []
    for _, isub, _, _, ifn in inner.partitions:
        try:
            compiled = km.compile_cached(ifn.mlir, dict(compile_options, name=ifn.name),
                                         cache)
        except KoptError:
            return None  # the partition still has kopt's whole and PyTorch's
        modules.append(km.KoptPartition(isub, ifn, compiled, None, km.Chooser("kopt")))
    partition.install(copy, inner.partitions, modules, prefix="kopt_epilogue")
    _views_to_reshapes(copy)
    return copy


def _capturable(fn, compiled, compile_options, cache, rep):
    """For CUDA graphs: ``compiled`` again with copy = cp_async for each kernel
    that reads operands through TMA tensor maps (which kopt's runtime keeps in
    device buffers it re-encodes, so they cannot be recorded in a graph);
    ``compiled`` itself when it has none, or when kopt refuses the change
    (then the graph runs without CUDA graphs, compile_graph says why)."""
    tma = [k["name"] for k in compiled.manifest.get("kernels", [])
           if k.get("tensor_maps")]
    if not tma:
        return compiled
    schedule = {name: {"copy": "cp_async"} for name in tma}
    try:
        again = km.compile_cached(fn.mlir, dict(compile_options, name=fn.name,
                                                schedule=schedule), cache)
    except KoptError as e:
        warnings.warn(f"kopt: {fn.name}: kernels {', '.join(tma)} read through TMA "
                      f"tensor maps and cannot be compiled with cp_async copies for "
                      f"CUDA graphs: {e}")
        return compiled
    rep.capturable_kernels.extend(tma)
    return again


class _FakeProp(torch.fx.Interpreter):
    def run_node(self, n):
        result = super().run_node(n)
        n.meta["val"] = result
        return result


def _specialize(gm: torch.fx.GraphModule, args) -> torch.fx.GraphModule:
    """A copy of ``gm`` whose meta['val'] hold the shapes of ``args``."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    g = copy.deepcopy(gm)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    with mode:
        _FakeProp(g).run(*fake)
    return g


class _PerShape:
    """A graph with symbolic shapes (Dynamo's automatic dynamic shapes):
    compiled for each new combination of input shapes at its first call, and
    taken from this cache after."""

    def __init__(self, gm, opts):
        self.gm, self.opts, self.compiled = gm, opts, {}

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor)
                    else a for a in args)
        fn = self.compiled.get(key)
        if fn is None:
            fn = compile_static(_specialize(self.gm, args), self.opts)
            self.compiled[key] = fn
        return fn(*args)


def compile_graph(gm: torch.fx.GraphModule, example_inputs, opts):
    """AOT autograd's inference compiler: a boxed callable."""
    symbolic = _symbolic(gm)
    run = _PerShape(gm, opts) if symbolic else compile_static(gm, opts)
    boxed = make_boxed_func(run)
    if not opts.cudagraphs:
        return boxed
    if symbolic:
        warnings.warn("kopt: CUDA graphs are off for a graph with dynamic shapes "
                      "(compile with dynamic=False to record one per shape)")
        return boxed
    tma = [k["name"] for m in run.modules() if isinstance(m, km.KoptPartition)
           and m.compiled is not None for k in m.compiled.manifest.get("kernels", [])
           if k.get("tensor_maps")]
    if tma:
        warnings.warn(f"kopt: CUDA graphs are off for this graph: kernels "
                      f"{', '.join(tma)} read operands through TMA tensor maps, "
                      f"which kopt's runtime re-encodes into device buffers when "
                      f"addresses change and so cannot be captured (without a "
                      f"'schedule' option the backend compiles such kernels with "
                      f"copy = cp_async for CUDA graphs; the given schedule, or kopt, "
                      f"kept TMA)")
        return boxed
    ctx = torch._guards.TracingContext.try_get()
    static = list(ctx.fw_metadata.static_input_indices) if ctx and ctx.fw_metadata else []
    runner = CudaGraphRunner(boxed, static, bool(opts.cudagraph_copy_outputs))
    return _boxed(runner)


def _boxed(runner):
    def run(args):
        a = list(args)
        args.clear()
        return runner(a)
    run._boxed_call = True
    return run
