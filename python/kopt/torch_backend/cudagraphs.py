"""CUDA graphs for a compiled graph (``mode="reduce-overhead"`` or the
``cudagraphs`` option): the first call records the whole forward (kopt's
launches and PyTorch's) into a ``torch.cuda.CUDAGraph``; later calls copy the
non-static inputs into the recorded buffers and replay it, one launch for the
whole graph.

Static inputs (parameters and buffers, as AOT autograd reports them: the
``static_input_indices`` that Inductor's CUDA graphs use) are read where they
are, never copied; if one of them moves (a new tensor object or storage), the
graph is recorded again. Outputs are copied out of the graph's memory by
default (``cudagraph_copy_outputs=True``) so that a later replay does not
overwrite what the caller holds.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import warnings

import torch


class CudaGraphRunner:
    def __init__(self, fn: Callable, static_inputs: Sequence[int], copy_outputs: bool,
                 warmup: int = 2):
        self.fn = fn  # a boxed function: fn(list of args) -> outputs
        self.static = set(static_inputs)
        self.copy_outputs = copy_outputs
        self.warmup = warmup
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.recorded: List = []
        self.outputs = None
        self.records = 0  # how many times the graph was recorded
        self.failed = False

    def _key(self, args):
        return [(a.data_ptr() if i in self.static else (tuple(a.shape), a.dtype))
                if isinstance(a, torch.Tensor) else a for i, a in enumerate(args)]

    def _record(self, args):
        device = next((a.device for a in args if isinstance(a, torch.Tensor)
                       and a.is_cuda), None)
        if device is None:
            return None
        inputs = [a if (i in self.static or not isinstance(a, torch.Tensor))
                  else a.clone() for i, a in enumerate(args)]
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(self.warmup):
                self.fn(list(inputs))
        torch.cuda.current_stream(device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = self.fn(list(inputs))
        self.graph, self.recorded, self.outputs = graph, inputs, outputs
        self.key = self._key(args)
        self.records += 1
        return outputs

    def __call__(self, args):
        args = list(args)
        if self.failed:
            return self.fn(args)
        if self.graph is None or self._key(args) != self.key:
            try:
                recorded = self._record(args)
            except Exception as e:  # noqa: BLE001 - any capture failure
                self.failed = True
                warnings.warn(f"kopt: recording a CUDA graph failed, this graph runs "
                              f"without one: {e}")
                return self.fn(args)
            if recorded is None:
                return self.fn(args)
        else:
            for i, (a, r) in enumerate(zip(args, self.recorded)):
                if i not in self.static and isinstance(a, torch.Tensor) \
                        and a.data_ptr() != r.data_ptr():
                    r.copy_(a)
        self.graph.replay()
        if self.copy_outputs:
            return [o.clone() if isinstance(o, torch.Tensor) else o for o in self.outputs]
        return list(self.outputs)
