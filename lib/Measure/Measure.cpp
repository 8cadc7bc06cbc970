//===- Measure.cpp - The timing loop, the audit and the watchdog ----------===//
//
// See include/kopt/Measure/Measure.h (METHOD) for what this does and why.
// Measurer::measure runs one Session: it makes the buffer sets, binds the
// target to each, then keeps up to kWindow runs in flight on the stream and
// completes them in order, polling each run's end event under the watchdog.
//
//===----------------------------------------------------------------------===//

#include "kopt/Measure/Measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <set>
#include <thread>

namespace kopt::measure {

using rt::CudaContext;
using rt::DeviceBuffer;
using rt::DevicePtr;
using rt::Event;
using rt::Role;

namespace {

using Clock = std::chrono::steady_clock;

/// Runs in flight at most: enough to keep the GPU busy while the host polls
/// (each run is at least an L2 flush, tens of microseconds on an H200).
constexpr size_t kWindow = 32;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// Polls `event` until it completes (true) or `deadline` passes (false);
/// no deadline: as long as it takes.
Expected<bool> waitEvent(CudaContext &ctx, Event event,
                         std::optional<Clock::time_point> deadline) {
  auto pause = std::chrono::microseconds(5);
  while (true) {
    Expected<bool> done = ctx.queryEvent(event);
    if (!done.ok() || *done)
      return done;
    Clock::time_point now = Clock::now();
    if (deadline && now >= *deadline)
      return false;
    Clock::duration sleep = pause;
    if (deadline)
      sleep = std::min(sleep, *deadline - now);
    std::this_thread::sleep_for(sleep);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

/// Destroys events on scope exit (cuEventDestroy does not wait for them).
struct EventRing {
  CudaContext &ctx;
  std::vector<Event> starts, ends;
  ~EventRing() {
    for (Event e : starts)
      (void)ctx.destroyEvent(e);
    for (Event e : ends)
      (void)ctx.destroyEvent(e);
  }
};

/// One measurement of one target.
class Session {
public:
  Session(CudaContext &ctx, rt::Stream stream, DeviceBuffer &flush, bool &lost,
          const Target &target, const Options &options, const AuditFn &audit)
      : ctx(ctx), stream(stream), flush(flush), lost(lost), target(target),
        options(options), audit(audit), events{ctx, {}, {}} {}

  Expected<Measurement> run(const std::vector<DevicePtr> &set0);

private:
  /// A run in flight.
  struct Pending {
    bool timed = false;
    /// Warm-up or timed run index, 0-based.
    int64_t index = 0;
    int64_t set = 0;
    bool audited = false;
    bool last = false;
    size_t slot = 0;
    Clock::time_point enqueued;
  };

  Status makeSets(const std::vector<DevicePtr> &set0);
  Status makeEvents();
  std::set<int64_t> plannedAudits() const;
  /// Whether the timed run `index` is the last one (runs or budget).
  bool isLast(int64_t index, Clock::time_point budgetStart,
              int64_t completedTimed) const;
  Status enqueue(Pending &run);
  /// Reads back and audits the outputs of `run` (which has finished).
  Status auditRun(const Pending &run);
  void giveUp(const Pending &run);
  std::string label(const Pending &run) const;

  CudaContext &ctx;
  rt::Stream stream;
  DeviceBuffer &flush;
  bool &lost;
  const Target &target;
  const Options &options;
  const AuditFn &audit;

  std::vector<std::vector<DevicePtr>> pointers;
  /// The buffers of sets 1 .. N-1.
  std::vector<DeviceBuffer> owned;
  EventRing events;
  size_t nextSlot = 0;
  Measurement result;
};

std::string Session::label(const Pending &run) const {
  std::string s = run.timed ? "timed run " : "warm-up run ";
  s += std::to_string(run.index + 1) + " of " +
       std::to_string(run.timed ? options.runs : options.warmup);
  if (options.inputSets > 1)
    s += " (buffer set " + std::to_string(run.set) + ")";
  return s;
}

Status Session::makeSets(const std::vector<DevicePtr> &set0) {
  pointers.push_back(set0);
  for (int64_t s = 1; s < options.inputSets; ++s) {
    std::vector<DevicePtr> set;
    for (size_t t = 0; t < target.tensors.size(); ++t) {
      const rt::TensorSpec &tensor = target.tensors[t];
      int64_t bytes = tensor.numBytes();
      std::string what = target.name + ": buffer set " + std::to_string(s) +
                         ", '" + tensor.name + "'";
      Expected<DeviceBuffer> buf = ctx.allocate(bytes);
      if (!buf.ok())
        return buf.status().withContext(what);
      DevicePtr ptr = buf->get();
      owned.push_back(buf.take());
      Status status =
          tensor.role == Role::Input
              ? ctx.copyDeviceAsync(ptr, set0[t], bytes, stream)
              : ctx.memsetAsync(ptr, tensor.role == Role::Output ? 0xff : 0,
                                bytes, stream);
      KOPT_RETURN_IF_ERROR(status.withContext(what));
      set.push_back(ptr);
    }
    pointers.push_back(std::move(set));
  }
  if (target.bind)
    for (size_t s = 0; s < pointers.size(); ++s)
      KOPT_RETURN_IF_ERROR(
          target.bind(s, pointers[s], stream)
              .withContext(target.name + ": buffer set " + std::to_string(s)));
  return Status::success();
}

Status Session::makeEvents() {
  size_t count = static_cast<size_t>(
      std::min<int64_t>(kWindow, options.warmup + options.runs));
  for (size_t i = 0; i < count; ++i) {
    for (std::vector<Event> *ring : {&events.starts, &events.ends}) {
      Expected<Event> e = ctx.createEvent();
      if (!e.ok())
        return e.status();
      ring->push_back(*e);
    }
  }
  return Status::success();
}

std::set<int64_t> Session::plannedAudits() const {
  // Spread evenly over the runs; the last of them is the last run.
  std::set<int64_t> planned;
  int64_t count = std::min(options.auditRuns, options.runs);
  for (int64_t j = 0; j < count; ++j)
    planned.insert((j + 1) * options.runs / count - 1);
  return planned;
}

bool Session::isLast(int64_t index, Clock::time_point budgetStart,
                     int64_t completedTimed) const {
  if (index + 1 == options.runs)
    return true;
  if (options.timeBudgetMs <= 0 || index + 1 < options.minRuns)
    return false;
  // The runs in flight still take time: project them at the pace so far.
  double elapsed = msSince(budgetStart);
  int64_t inFlight = index - completedTimed;
  double pace = completedTimed > 0 ? elapsed / double(completedTimed) : 0.0;
  return elapsed + double(inFlight) * pace >= options.timeBudgetMs;
}

Status Session::enqueue(Pending &run) {
  run.slot = nextSlot;
  nextSlot = (nextSlot + 1) % events.ends.size();
  std::string what = target.name + ": " + label(run);
  if (run.audited)
    for (size_t t = 0; t < target.tensors.size(); ++t)
      if (target.tensors[t].role == Role::Output)
        KOPT_RETURN_IF_ERROR(ctx.memsetAsync(pointers[run.set][t], 0xff,
                                             target.tensors[t].numBytes(),
                                             stream)
                                 .withContext(what + ": poisoning '" +
                                              target.tensors[t].name + "'"));
  if (run.timed) {
    if (options.l2FlushBytes > 0)
      KOPT_RETURN_IF_ERROR(
          ctx.memsetAsync(flush.get(), 0, options.l2FlushBytes, stream)
              .withContext(what + ": L2 flush"));
    KOPT_RETURN_IF_ERROR(ctx.record(events.starts[run.slot], stream));
  }
  KOPT_RETURN_IF_ERROR(target.enqueue(run.set, stream).withContext(what));
  KOPT_RETURN_IF_ERROR(ctx.record(events.ends[run.slot], stream));
  run.enqueued = Clock::now();
  return Status::success();
}

Status Session::auditRun(const Pending &run) {
  AuditRun outputs;
  outputs.run = run.index;
  outputs.set = run.set;
  outputs.last = run.last;
  AuditRecord record;
  record.run = run.index;
  record.set = run.set;
  std::string scanReason;
  for (size_t t = 0; t < target.tensors.size(); ++t) {
    const rt::TensorSpec &tensor = target.tensors[t];
    if (tensor.role != Role::Output)
      continue;
    AuditedOutput out;
    out.index = t;
    out.tensor = &tensor;
    out.bytes.resize(static_cast<size_t>(tensor.numBytes()));
    KOPT_RETURN_IF_ERROR(ctx.copyToHost(out.bytes.data(), pointers[run.set][t],
                                        tensor.numBytes())
                             .withContext(target.name + ": " + label(run) +
                                          ": reading '" + tensor.name + "'"));
    OutputScan scan =
        scanOutput(out.bytes.data(), tensor.dtype, tensor.numElements());
    record.unwritten += scan.unwritten;
    record.nonFinite += scan.nonFinite;
    std::string of = " of " + std::to_string(tensor.numElements()) +
                     " elements of '" + tensor.name + "'";
    if (scanReason.empty() && scan.unwritten > 0)
      scanReason = std::to_string(scan.unwritten) + of +
                   " not written (still the 0xFF poison; first at index " +
                   std::to_string(scan.firstUnwritten) + ")";
    else if (scanReason.empty() && options.rejectNonFinite &&
             scan.nonFinite > 0)
      scanReason = std::to_string(scan.nonFinite) + of +
                   " are NaN or Inf (first at index " +
                   std::to_string(scan.firstNonFinite) + ")";
    outputs.outputs.push_back(std::move(out));
  }
  record.passed = scanReason.empty();
  record.reason = scanReason;
  if (audit) {
    AuditVerdict verdict = audit(outputs);
    if (!verdict.passed) {
      record.passed = false;
      if (record.reason.empty())
        record.reason =
            verdict.reason.empty() ? "the audit failed" : verdict.reason;
    }
  }
  if (!record.passed)
    result.errors.push_back(target.name + ": " + label(run) +
                            ": audit failed: " + record.reason);
  result.audits.push_back(std::move(record));
  return Status::success();
}

void Session::giveUp(const Pending &run) {
  result.timedOut = true;
  result.errors.push_back(
      target.name + ": " + label(run) + " did not finish within " +
      number(options.timeoutMs) +
      " ms; gave up on it (the GPU may still be running it, so the CUDA "
      "context is lost)");
  // Nothing may be freed: cuMemFree would wait for the kernel.
  for (DeviceBuffer &b : owned)
    (void)b.release();
  if (target.abandon)
    target.abandon();
  (void)flush.release();
  lost = true;
}

Expected<Measurement> Session::run(const std::vector<DevicePtr> &set0) {
  result.inputSets = options.inputSets;
  result.l2FlushBytes = options.l2FlushBytes;
  if (options.l2FlushBytes > flush.size()) {
    flush.reset();
    Expected<DeviceBuffer> f = ctx.allocate(options.l2FlushBytes);
    if (!f.ok())
      return f.status().withContext(target.name + ": L2 flush buffer");
    flush = f.take();
  }
  KOPT_RETURN_IF_ERROR(makeSets(set0));
  KOPT_RETURN_IF_ERROR(makeEvents());
  const std::set<int64_t> planned =
      options.auditRuns > 0 ? plannedAudits() : std::set<int64_t>();

  Clock::time_point start = Clock::now(), budgetStart = start, lastDone = start;
  std::deque<Pending> queue;
  int64_t next = 0; // warm-up runs, then timed runs
  int64_t completedTimed = 0;
  bool stopped = false;
  while (true) {
    // Enqueue while there is room, but nothing behind an audited run: its
    // set's outputs must stay as it left them until they are read.
    while (!stopped && queue.size() < events.ends.size() &&
           (queue.empty() || !queue.back().audited)) {
      // With a budget, the first timed run alone, after the warm-up: its
      // time gives the pace at which isLast projects the runs in flight.
      if (options.timeBudgetMs > 0 && completedTimed == 0 &&
          (next > options.warmup || (next == options.warmup && !queue.empty())))
        break;
      Pending run;
      run.timed = next >= options.warmup;
      run.index = run.timed ? next - options.warmup : next;
      run.set = run.index % options.inputSets;
      if (run.timed) {
        if (run.index == 0)
          budgetStart = Clock::now();
        run.last = isLast(run.index, budgetStart, completedTimed);
        run.audited =
            options.auditRuns > 0 && (run.last || planned.count(run.index));
      }
      KOPT_RETURN_IF_ERROR(enqueue(run));
      queue.push_back(run);
      ++next;
      if (run.last) {
        stopped = true;
        result.budgetStopped = run.index + 1 < options.runs;
      }
    }
    if (queue.empty())
      break;

    const Pending &run = queue.front();
    std::optional<Clock::time_point> deadline;
    if (options.timeoutMs > 0)
      deadline =
          std::max(run.enqueued, lastDone) +
          std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double, std::milli>(options.timeoutMs));
    Expected<bool> done = waitEvent(ctx, events.ends[run.slot], deadline);
    if (!done.ok())
      return done.status().withContext(target.name + ": " + label(run));
    if (!*done) {
      giveUp(run);
      break;
    }
    lastDone = Clock::now();
    if (!run.timed) {
      ++result.warmup;
    } else {
      ++completedTimed;
      Expected<float> ms =
          ctx.elapsedMs(events.starts[run.slot], events.ends[run.slot]);
      if (!ms.ok())
        return ms.status().withContext(target.name + ": " + label(run));
      if (std::isfinite(*ms) && *ms >= 0)
        result.samplesMs.push_back(*ms);
      else
        result.errors.push_back(target.name + ": " + label(run) +
                                ": the events gave a time of " + number(*ms) +
                                " ms");
      if (run.audited)
        KOPT_RETURN_IF_ERROR(auditRun(run));
    }
    queue.pop_front();
  }
  result.runs = static_cast<int64_t>(result.samplesMs.size());
  result.stats = summarize(result.samplesMs);
  result.wallMs = msSince(start);
  return std::move(result);
}

} // namespace

Measurer::~Measurer() {
  if (lost)
    (void)flush.release();
}

Expected<Measurement> Measurer::measure(const Target &target,
                                        const std::vector<DevicePtr> &set0,
                                        const Options &options,
                                        const AuditFn &audit) {
  if (lost)
    return Status::error(target.name +
                         ": the CUDA context was lost when an earlier run "
                         "timed out; nothing more can be measured on it");
  KOPT_RETURN_IF_ERROR(validateOptions(options).withContext(target.name));
  if (!target.enqueue)
    return Status::error(target.name + ": the target has no enqueue");
  if (set0.size() != target.tensors.size())
    return Status::error(
        target.name + ": " + std::to_string(target.tensors.size()) +
        " tensors, but " + std::to_string(set0.size()) + " device pointers");
  for (size_t t = 0; t < set0.size(); ++t)
    if (set0[t] == 0)
      return Status::error(target.name + ": the pointer of '" +
                           target.tensors[t].name + "' is null");
  Session session(ctx, stream, flush, lost, target, options, audit);
  return session.run(set0);
}

Expected<bool> waitForStream(CudaContext &ctx, rt::Stream stream,
                             double timeoutMs) {
  Expected<Event> event = ctx.createEvent();
  if (!event.ok())
    return event.status();
  EventRing ring{ctx, {}, {*event}};
  KOPT_RETURN_IF_ERROR(ctx.record(*event, stream));
  std::optional<Clock::time_point> deadline;
  if (timeoutMs > 0)
    deadline = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double, std::milli>(timeoutMs));
  return waitEvent(ctx, *event, deadline);
}

} // namespace kopt::measure
