"""Per partition, kopt's kernels or PyTorch's: whichever measures faster.

With ``choose="measure"`` (the default), a partition's first call on the GPU
runs both ways on that call's own inputs: each once to warm up (PyTorch's
allocator, Triton's autotuning when Inductor runs the remainder) and to check
that they agree (:func:`mismatch`), then ``choose_runs`` timed calls of each,
interleaved, each after the L2 cache is flushed (a 256 MiB buffer zeroed:
more than the H200's 50 MiB L2), timed with CUDA events on the current
stream, and as many calls in a row (launch overhead, when the CPU is slower
than the GPU); under CUDA graphs, replays of each recorded into a graph of
its own (:func:`measure_all`). The lower cost wins and is used from then on.
kopt wins ties within 2%: its kernels are the ones the search can still
improve. A partition that holds matmuls and other ops has a third candidate,
the split variant (:data:`SPLIT`: PyTorch's matmuls, kopt's kernels for the
rest), measured with the other two (:func:`decide_partition`). A call made
while a CUDA graph is being recorded cannot be timed; it runs kopt's kernels
and leaves the choice to a later call.

With a tuning database (the ``tuning_db`` option), the measurements are
recorded as trials of the workload ``torch-partition/<sha256 of the
partition's kopt MLIR, its function renamed>/<chip>/<pytorch impl>`` (the MLIR
holds every shape and dtype; workload_key), op chain ``partition``, schedule
``{"impl": "kopt"}``, ``{"impl": "split"}`` or ``{"impl": "pytorch"}`` /
``{"impl": "inductor"}``, strategy ``torch_backend``. A later compile whose
database holds each candidate takes the fastest without measuring, so the
backend never picks the slower implementation it knows of.
``choose="kopt"`` always runs kopt's kernels (no measurement).
"""

from __future__ import annotations

import hashlib
import statistics
import warnings
from dataclasses import dataclass
from typing import Callable, List, Optional

import torch

from ..errors import KoptError

_FLUSH_BYTES = 256 << 20
_TIE = 0.02  # kopt keeps a partition unless PyTorch is more than 2% faster


@dataclass
class Choice:
    """``impl`` "kopt", "split" (PyTorch's matmuls, kopt's kernels for the
    rest: :data:`SPLIT`), "pytorch" or "inductor" for a kopt partition;
    "inductor" or "eager" for a group of the remainder (``labels`` then name
    the two sides: ("Inductor", "eager")). ``source``: "measured",
    "tuning_db", "option" or "mismatch"."""
    impl: str
    source: str
    kopt_ms: Optional[float] = None  # the first side's cost
    pytorch_ms: Optional[float] = None  # the second side's
    labels: tuple = ("kopt", "PyTorch")
    split_ms: Optional[float] = None  # the split variant's, where there is one

    def __str__(self) -> str:
        if self.kopt_ms is None or self.pytorch_ms is None:
            return f"{self.impl} ({self.source})"
        split = "" if self.split_ms is None else \
            f", PyTorch's matmuls + kopt {self.split_ms:.4f} ms"
        return (f"{self.impl} ({self.source}: {self.labels[0]} {self.kopt_ms:.4f} ms"
                f"{split}, {self.labels[1]} {self.pytorch_ms:.4f} ms)")


#: The impl of a partition whose matmuls PyTorch runs (cuBLAS) and whose
#: other ops kopt's kernels run: a third candidate for partitions that hold
#: matmuls and other ops, for shapes where kopt's matmul loses to cuBLAS but
#: its fused epilogues and row kernels win.
SPLIT = "split"


def workload_key(mlir: str, chip: str, alt: str, name: str = "") -> str:
    """The partition's key in the tuning database: the SHA-256 of its MLIR
    with the function's name (``name``: partition_<k>, which depends on where
    in which graph it stands) replaced, so that the same ops on the same
    shapes share one key across graphs and models."""
    if name:
        mlir = mlir.replace(f"func.func @{name}(", "func.func @partition(", 1)
    digest = hashlib.sha256(mlir.encode()).hexdigest()[:32]
    return f"torch-partition/{digest}/{chip}/{alt}"


def decide(kopt_ms: float, pytorch_ms: float, alt: str, source: str,
           first: str = "kopt", labels: tuple = ("kopt", "PyTorch")) -> Choice:
    """``first`` (kopt) unless ``alt`` is more than 2% faster."""
    impl = alt if pytorch_ms < kopt_ms * (1.0 - _TIE) else first
    return Choice(impl, source, kopt_ms, pytorch_ms, labels)


def decide_partition(kopt_ms: Optional[float], split_ms: Optional[float],
                     pytorch_ms: float, alt: str, source: str) -> Choice:
    """A partition's choice from the costs of kopt's kernels, of the split
    variant (None where there is none or it was not usable) and of PyTorch's:
    the cheaper of kopt's two unless ``alt`` is more than 2% faster than it."""
    ours = [(ms, impl) for ms, impl in ((kopt_ms, "kopt"), (split_ms, SPLIT))
            if ms is not None]
    if not ours:
        return Choice(alt, source, kopt_ms, pytorch_ms, split_ms=split_ms)
    best_ms, best = min(ours)
    c = decide(best_ms, pytorch_ms, alt, source, first=best)
    return Choice(c.impl, source, kopt_ms, pytorch_ms, split_ms=split_ms)


def settle(first_ms, second_ms, bad: Optional[str], first: str, second: str,
           disagree: str, then: str, labels: tuple = ("kopt", "PyTorch")) -> Choice:
    """The choice a :func:`measure` makes: ``second`` when the two disagreed
    (``bad`` says how; a warning ``"kopt: <disagree> with <labels[1]> (<bad>);
    <then>"``), else :func:`decide`'s."""
    if bad is not None:
        warnings.warn(f"kopt: {disagree} with {labels[1]} ({bad}); {then}")
        return Choice(second, "mismatch", labels=labels)
    return decide(first_ms, second_ms, second, "measured", first=first, labels=labels)


def from_db(db: Optional[str], workload: str, alt: str,
            split: bool = False) -> Optional[Choice]:
    """The choice the database's measurements make (None unless it holds a
    usable trial of each implementation: kopt's, PyTorch's and, with
    ``split``, the split variant's)."""
    if not db:
        return None
    from .. import tuning_db
    try:
        rows = tuning_db.trials(db, workload)
    except (KoptError, ValueError) as e:
        warnings.warn(f"kopt: cannot read the tuning database: {e}")
        return None
    best = {}
    for r in rows:
        schedule = r.get("schedule")
        impl = schedule.get("impl") if isinstance(schedule, dict) else None
        ms = r.get("median_ms")
        if impl in ("kopt", SPLIT, alt) and isinstance(ms, (int, float)):
            best[impl] = min(ms, best.get(impl, float("inf")))
    if "kopt" in best and alt in best and (SPLIT in best or not split):
        return decide_partition(best["kopt"], best.get(SPLIT) if split else None,
                                best[alt], alt, "tuning_db")
    return None


def mismatch(kopt_out, pytorch_out) -> Optional[str]:
    """Why kopt's outputs are not PyTorch's within the rounding of their dtype
    (max |difference| over max |PyTorch's|: 0.05 for bfloat16, 0.01 for
    float16 and for float32 (TF32 products allowed), exact for integer and
    bool outputs), or None. NaN and inf must stand where PyTorch has them."""
    for i, (k, p) in enumerate(zip(kopt_out, pytorch_out)):
        if not isinstance(p, torch.Tensor):
            continue
        if not isinstance(k, torch.Tensor) or k.shape != p.shape or k.dtype != p.dtype:
            return f"output {i}: not a {p.dtype} tensor of shape {list(p.shape)}"
        if not p.is_floating_point():
            if not torch.equal(k, p):
                return f"output {i} differs"
            continue
        kf, pf = k.float(), p.float()
        inf_p = torch.isinf(pf)
        if not torch.equal(torch.isnan(kf), torch.isnan(pf)) or not torch.equal(
                torch.isinf(kf), inf_p) or not torch.equal(kf[inf_p], pf[inf_p]):
            return f"output {i}: NaN or inf where PyTorch has none, or the reverse"
        finite = torch.isfinite(pf)
        kd, pd = kf[finite], pf[finite]
        scale = pd.abs().max().item() if pd.numel() else 0.0
        err = (kd - pd).abs().max().item() if pd.numel() else 0.0
        tol = {torch.bfloat16: 0.05, torch.float16: 0.01}.get(p.dtype, 0.01)
        if err > tol * max(scale, 1e-30):
            return (f"output {i}: max |kopt - PyTorch| = {err:.3g}, max |PyTorch| = "
                    f"{scale:.3g}")
    return None


def _flushed_medians(fns, device, runs) -> List[float]:
    """Median ms of each of ``fns`` (interleaved, L2 flushed before each)."""
    times: List[List[float]] = [[] for _ in fns]
    events = []
    # Held only while measuring (PyTorch's caching allocator keeps the block
    # for other tensors after).
    flush = torch.empty(_FLUSH_BYTES, dtype=torch.uint8, device=device)
    for _ in range(runs):
        for which, fn in enumerate(fns):
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            events.append((which, start, end))
    torch.cuda.synchronize(device)
    for which, start, end in events:
        times[which].append(start.elapsed_time(end))
    return [statistics.median(t) for t in times]


def _back_to_back(fn, device, runs) -> float:
    """Mean ms per call of ``runs`` calls in a row: what a caller whose CPU
    launches more slowly than the GPU runs waits (launch overhead included)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        fn()
    end.record()
    torch.cuda.synchronize(device)
    return start.elapsed_time(end) / runs


def _replay_of(fn, device):
    """``fn`` recorded into a CUDA graph (after a warm-up on a side stream):
    its replay."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def measure_all(fns: List[Callable[[], object]], device: torch.device, runs: int,
                graphs: bool = False) -> tuple:
    """Checks the outputs of each of ``fns`` but the last against the last's
    (PyTorch's: :func:`mismatch`), then the cost in ms of each that agrees.
    ``graphs`` (the forward is replayed from a CUDA graph, where launches cost
    nothing on the CPU): the flushed median of replays of each recorded into a
    graph of its own, or, when one cannot be recorded (TMA tensor maps), as
    without. Without: the larger of the flushed median (the GPU's time) and
    the mean per call of calls in a row (the CPU's launch time, when it is the
    larger). Returns (costs, mismatches): per fn, ms (None for one that
    disagrees) and the mismatch or None."""
    ref = fns[-1]()
    bads = [mismatch(fn(), ref) for fn in fns[:-1]] + [None]
    live = [fn for fn, bad in zip(fns, bads) if bad is None]
    costs = None
    if graphs:
        try:
            costs = _flushed_medians([_replay_of(fn, device) for fn in live], device, runs)
        except Exception:  # noqa: BLE001 - not capturable: timed as without
            torch.cuda.synchronize(device)
    if costs is None:
        flushed = _flushed_medians(live, device, runs)
        costs = [max(f, _back_to_back(fn, device, runs)) for f, fn in zip(flushed, live)]
    it = iter(costs)
    return [None if bad is not None else next(it) for bad in bads], bads


def measure(run_kopt: Callable[[], object], run_pytorch: Callable[[], object],
            device: torch.device, runs: int, graphs: bool = False) -> tuple:
    """:func:`measure_all` of the two: (kopt ms, PyTorch ms, mismatch or None);
    no timing after a mismatch."""
    (kopt_ms, pytorch_ms), (bad, _) = measure_all([run_kopt, run_pytorch], device,
                                                  runs, graphs)
    if bad is not None:
        return None, None, bad
    return kopt_ms, pytorch_ms, None


def record_db(db: str, workload: str, choice: Choice, alt: str, runs: int,
              device: torch.device) -> None:
    from .. import tuning_db
    name = torch.cuda.get_device_name(device)
    try:
        for impl, ms in (("kopt", choice.kopt_ms), (SPLIT, choice.split_ms),
                         (alt, choice.pytorch_ms)):
            if ms is None:
                continue
            tuning_db.add(db, {"workload": workload, "ops": "partition",
                               "schedule": {"impl": impl}, "status": "ok",
                               "strategy": "torch_backend", "measurer": "gpu",
                               "median_ms": ms, "runs": runs, "correct": True,
                               "device": name})
    except KoptError as e:
        warnings.warn(f"kopt: cannot record the partition's measurements in the "
                      f"tuning database: {e}")


def record_wrong(db: str, workload: str, reason: str, device: torch.device,
                 impl: str = "kopt") -> None:
    from .. import tuning_db
    try:
        tuning_db.add(db, {"workload": workload, "ops": "partition",
                           "schedule": {"impl": impl}, "status": "wrong",
                           "error": reason, "strategy": "torch_backend",
                           "measurer": "gpu", "correct": False,
                           "device": torch.cuda.get_device_name(device)})
    except KoptError as e:
        warnings.warn(f"kopt: cannot record the mismatch in the tuning database: {e}")
