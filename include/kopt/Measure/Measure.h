//===- Measure.h - How kopt times a kernel on the GPU -----------*- C++ -*-===//
//
// The one measurement method of kopt, used by kopt-run and by the tuner: it
// times one kernel of a launch manifest, one function of it (all its
// launches), or any Target (a callback that enqueues one run), and audits
// the outputs of some of the timed runs. No MLIR: it sits on lib/Runtime's
// CudaContext (the CUDA driver API).
//
// METHOD (docs/runtime.md, "Measurement", says the same for users)
//
//  1. Buffer sets. Set 0 is the caller's buffers, inputs filled. With
//     `inputSets` N > 1, sets 1 .. N-1 are fresh allocations: inputs copied
//     from set 0 on the device, outputs poisoned with 0xFF bytes, workspaces
//     zeroed. Run i (warm-up and timed alike) uses set i mod N, so no run
//     reads the buffers the run before it read or wrote, and an output that
//     a kernel "reuses" instead of computing is caught by the audit. Each set
//     gets its own tensor maps, encoded once before the warm-up: nothing is
//     encoded or copied inside the timed loop. (Rotating buffers is what
//     PyTorch's TunableOp does for the same reason:
//     torch.cuda.tunable.set_rotating_buffer_size.)
//  2. Warm-up: `warmup` untimed runs, cycling the sets. The first launches of
//     a kernel pay for module loading, the first touch of its pages and the
//     GPU's clocks ramping up (Triton's do_bench warms up for 25 ms; nvbench
//     runs a warm-up pass before every measurement).
//  3. Timed runs, each: an L2 flush (cuMemsetD8Async of zeros over
//     `l2FlushBytes`, 256 MiB by default, several times the 50-60 MB of an
//     H100/H200's L2; the same buffer and size as Triton's do_bench, which
//     zeroes a 256 MB buffer before every run, and nvbench's "cold"
//     measurements, which flush L2 between samples), then a start event,
//     the run, an end event, all on one stream. The time of a run is
//     cuEventElapsedTime between its two events: GPU time, resolution about
//     0.5 us (CUDA driver API documentation), with the flush outside it. Up
//     to 32 runs are in flight; the host never waits for the GPU between
//     runs except after an audited one (and, with a time budget, after the
//     warm-up and after the first timed run, whose time sets the pace).
//  4. Stopping: after `runs` timed runs, or, with a `timeBudgetMs`, at the
//     first run whose projected end (host time since the first timed run,
//     plus the runs in flight at the pace so far) passes the budget, but not
//     before `minRuns` (nvbench's --min-samples and --min-time / --timeout
//     play these roles).
//  5. Statistics over the runs' times: median (the reported figure: robust to
//     the outliers that interrupts, clock changes and other processes add;
//     Triton's do_bench and nvbench report it or its quantiles too), min,
//     max, mean, sample standard deviation, p10 and p90. Quantiles
//     interpolate linearly between the order statistics at q (n - 1)
//     (numpy.quantile's default, Triton's _quantile). A time that is NaN,
//     Inf or negative fails the measurement.
//  6. Audit: `auditRuns` of the timed runs, spread evenly over `runs`, the
//     last run always among them, get their set's outputs poisoned (0xFF,
//     a NaN in every dtype) before the run (outside the events; the flush
//     evicts it) and read back after it. An element still holding the
//     poison was not written; with `rejectNonFinite` an element that is NaN
//     or Inf fails the run too; then the caller's AuditFn (if any) compares
//     the outputs with its reference. A failed audit makes the measurement
//     invalid (errors): a kernel whose result changes from run to run (a
//     race, a stale buffer) or goes wrong only after some launches is caught
//     among the runs that were timed, not only in a separate check.
//  7. Watchdog: with `timeoutMs` > 0 the host never blocks on the GPU: it
//     polls the events (cuEventQuery, sleeping 5 us doubling to 1 ms between
//     polls) and gives up on a run (warm-up or timed) that has not finished
//     `timeoutMs` after it could start (the previous run's end, or its
//     enqueue). A timeout is reported in the Measurement (timedOut, errors),
//     and the Measurer is then lost: the GPU may still run the kernel, so it
//     frees nothing (cuMemFree would wait for the kernel) and refuses to
//     measure again. The caller should do the same: write what it has and
//     leave the process (std::_Exit), as kopt-run does.
//
// Errors: bad options, CUDA failures (including a kernel's execution error,
// seen by cuEventQuery) and failures of the Target come back as a failed
// Expected, naming the target and the run. Problems with the kernel under
// measurement (a timeout, an audit failure, NaN/Inf, a bad time) come back
// inside the Measurement, in `errors`.
//
// Threading: use a Measurer from the thread that owns its CudaContext.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_MEASURE_MEASURE_H
#define KOPT_MEASURE_MEASURE_H

#include "kopt/Runtime/Runtime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kopt::measure {

using rt::Expected;
using rt::Status;

/// How to measure (METHOD above).
struct Options {
  /// Untimed runs before the timed ones.
  int64_t warmup = 10;
  /// Timed runs (at most, with a time budget); at least 1.
  int64_t runs = 100;
  /// With a time budget: stop no earlier than this many timed runs (1 to
  /// `runs`).
  int64_t minRuns = 1;
  /// Host time for the timed runs, ms; 0: no budget (exactly `runs`).
  double timeBudgetMs = 0;
  /// Bytes zeroed before every timed run to flush L2; 0: no flush.
  int64_t l2FlushBytes = int64_t(256) << 20;
  /// Buffer sets cycled by the runs (1: the caller's buffers only).
  int64_t inputSets = 1;
  /// Timed runs whose outputs are poisoned before and checked after (0:
  /// none; more than `runs`: every run).
  int64_t auditRuns = 1;
  /// Whether NaN or Inf in an audited output fails the audit.
  bool rejectNonFinite = true;
  /// Watchdog per run, ms; 0: wait as long as it takes.
  double timeoutMs = 10000;
};

/// Checks `options`; the message names the field, e.g. "runs must be at
/// least 1, got 0".
Status validateOptions(const Options &options);

/// Summary statistics of run times, ms.
struct Stats {
  double medianMs = 0, minMs = 0, maxMs = 0, meanMs = 0;
  /// Sample standard deviation (n - 1 in the denominator; 0 for one run).
  double stddevMs = 0;
  double p10Ms = 0, p90Ms = 0;
};

/// The statistics of `samplesMs` (any order); all zero when it is empty.
Stats summarize(std::vector<double> samplesMs);

/// The q-quantile (0 <= q <= 1) of `sorted` (ascending, not empty): linear
/// interpolation between the order statistics around q (n - 1).
double quantile(const std::vector<double> &sorted, double q);

/// What a scan of one output found.
struct OutputScan {
  /// Elements that still hold the 0xFF poison (not written).
  int64_t unwritten = 0;
  /// Other elements that are NaN or Inf.
  int64_t nonFinite = 0;
  /// Flat index of the first of each (-1: none).
  int64_t firstUnwritten = -1;
  int64_t firstNonFinite = -1;
};

/// Scans `elements` elements of `dtype` at `data`.
OutputScan scanOutput(const void *data, rt::DType dtype, int64_t elements);

/// One output of an audited run, as the run left it.
struct AuditedOutput {
  /// Index of the tensor in Target::tensors (for a kernel: its params).
  size_t index = 0;
  const rt::TensorSpec *tensor = nullptr;
  std::vector<uint8_t> bytes;
};

/// The outputs of one audited run.
struct AuditRun {
  /// Timed run, 0-based, and the buffer set it used.
  int64_t run = 0;
  int64_t set = 0;
  /// Whether it is the last timed run.
  bool last = false;
  std::vector<AuditedOutput> outputs;
};

/// The caller's verdict on an audited run (e.g. against its reference).
struct AuditVerdict {
  bool passed = true;
  /// Why it failed (empty when it passed).
  std::string reason;
};
using AuditFn = std::function<AuditVerdict(const AuditRun &)>;

/// The outcome of one audited run.
struct AuditRecord {
  int64_t run = 0;
  int64_t set = 0;
  bool passed = true;
  /// Over all outputs (OutputScan).
  int64_t unwritten = 0;
  int64_t nonFinite = 0;
  /// Why it failed: the scan's finding, else the AuditFn's reason.
  std::string reason;
};

/// The result of one measurement.
struct Measurement {
  /// Over `samplesMs`.
  Stats stats;
  /// The time of every timed run, in order.
  std::vector<double> samplesMs;
  /// Timed runs done (samplesMs.size()) and warm-up runs done.
  int64_t runs = 0;
  int64_t warmup = 0;
  /// Buffer sets used and bytes flushed before each run (the options').
  int64_t inputSets = 1;
  int64_t l2FlushBytes = 0;
  /// Host time from the first warm-up run to the last run's end, ms.
  double wallMs = 0;
  /// Whether the time budget stopped the runs before `Options::runs`.
  bool budgetStopped = false;
  /// The audited runs, in order.
  std::vector<AuditRecord> audits;
  /// Whether a run did not finish within the timeout (the Measurer is lost).
  bool timedOut = false;
  /// Why the measurement is not to be trusted: a timeout, failed audits, a
  /// bad time; each names the target and the run. Empty when valid.
  std::vector<std::string> errors;

  bool valid() const { return errors.empty(); }
  /// Whether every audited run passed (true when none was audited).
  bool auditPassed() const;
};

/// Something to time, one run at a time, over buffer sets (METHOD, 1).
struct Target {
  /// Names it in messages, e.g. "kernel 'softmax_0'".
  std::string name;
  /// The tensors of one buffer set (one device buffer each): inputs are
  /// copied into new sets, outputs poisoned and audited, workspaces zeroed.
  std::vector<rt::TensorSpec> tensors;
  /// Called once per set, in order, before the warm-up, with the set's
  /// device pointers (one per tensor): prepares what `enqueue` needs
  /// (argument packs, tensor maps). May enqueue work on `stream`.
  std::function<Status(size_t set, const std::vector<rt::DevicePtr> &pointers,
                       rt::Stream stream)>
      bind;
  /// Enqueues one run on set `set` on `stream`; must not synchronize.
  std::function<Status(size_t set, rt::Stream stream)> enqueue;
  /// Called instead of freeing after a timeout: give up the device memory
  /// the target holds without freeing it (DeviceBuffer::release). Optional.
  std::function<void()> abandon;
};

/// Measures on one context and stream; keeps the L2 flush buffer between
/// measurements.
class Measurer {
public:
  Measurer(rt::CudaContext &ctx, rt::Stream stream)
      : ctx(ctx), stream(stream) {}
  ~Measurer();
  Measurer(const Measurer &) = delete;
  Measurer &operator=(const Measurer &) = delete;

  /// Times `target` with `set0` (one device pointer per tensor, inputs
  /// filled) as buffer set 0, auditing with `audit` when given.
  Expected<Measurement> measure(const Target &target,
                                const std::vector<rt::DevicePtr> &set0,
                                const Options &options,
                                const AuditFn &audit = {});

  /// Times `kernel` of `manifest` (its PTX loaded on first use) with
  /// `params`, one device pointer per parameter, as set 0. The audit gets
  /// the kernel's output parameters.
  Expected<Measurement> measureKernel(const rt::Manifest &manifest,
                                      const rt::KernelSpec &kernel,
                                      const std::vector<rt::DevicePtr> &params,
                                      const Options &options,
                                      const AuditFn &audit = {});

  /// Times one run of `function` of `manifest`, all its launches in order,
  /// with `args` (manifest order) as set 0; each set gets a workspace for
  /// the function's intermediate buffers (zeroed once). The audit gets the
  /// function's output arguments.
  Expected<Measurement> measureFunction(const rt::Manifest &manifest,
                                        const rt::FunctionSpec &function,
                                        const std::vector<rt::DevicePtr> &args,
                                        const Options &options,
                                        const AuditFn &audit = {});

  /// Whether a run timed out: the context must not be used any more.
  bool contextLost() const { return lost; }

private:
  rt::CudaContext &ctx;
  rt::Stream stream;
  rt::DeviceBuffer flush;
  bool lost = false;
};

/// Waits for the work enqueued on `stream` so far, giving up after
/// `timeoutMs` (0: no limit) as the watchdog does (METHOD, 7): true when it
/// finished, false when it timed out (the context is then lost). For a
/// caller's own launches, e.g. kopt-run's first launch before its check.
Expected<bool> waitForStream(rt::CudaContext &ctx, rt::Stream stream,
                             double timeoutMs);

} // namespace kopt::measure

#endif // KOPT_MEASURE_MEASURE_H
