//===- kopt-run.cpp - Check and time the kernels of a launch manifest -----===//
//
//   kopt-run MANIFEST.json [--kernel NAME]... [--runs N] [--warmup N]
//            [--rotate N] [--audit N] [--timeout MS] [--time-budget MS]
//            [--min-runs N] [--seed S] [--device N] [--no-time] [--no-check]
//            [-o OUT.json]
//
// For each kernel of the manifest (or each one named with --kernel): fresh
// random inputs, outputs poisoned with 0xFF bytes (NaN in every dtype), one
// launch, a check against an independent reference (CPU float64, or cuBLAS
// for matmul), then timing by kopt's measurement library
// (include/kopt/Measure/Measure.h): warm-up launches, then per run an L2
// flush (cuMemsetD8Async over 256 MiB), start event, launch, end event, over
// --rotate buffer sets, with --audit timed runs checked against the
// reference again and a watchdog that gives up on a launch that does not
// finish within --timeout ms. A kernel with TMA tensor maps gets them encoded
// for its buffers once, before the first launch. Prints one JSON document
// (see docs/runtime.md for the fields).
//
// Exit code: 0 when every check passed (or --no-check), 1 when a check
// failed, 2 on usage, manifest or CUDA errors and timeouts ("kopt-run: error:
// ..." on stderr; the JSON, if any kernel ran, is still written).
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Measure/Measure.h"
#include "kopt/Runtime/ArgPack.h"
#include "kopt/Runtime/Check.h"
#include "kopt/Runtime/Float16.h"
#include "kopt/Runtime/Inputs.h"
#include "kopt/Runtime/Reference.h"
#include "kopt/Runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kopt::rt;
using kopt::run::kUsage;
using kopt::run::Options;
using kopt::run::parseArgs;
namespace measure = kopt::measure;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int kExitFailedCheck = 1;
constexpr int kExitError = 2;

void printError(const std::string &message) {
  std::fprintf(stderr, "kopt-run: error: %s\n", message.c_str());
}

/// Whether two paths name the same file: the same file on disk (links
/// included) or, for files that do not exist yet, the same normalized path.
bool samePath(const std::string &a, const std::string &b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec))
    return fs::equivalent(a, b, ec);
  fs::path ca = fs::weakly_canonical(a, ec), cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

ojson shapeJson(const Shape &shape) {
  ojson a = ojson::array();
  for (int64_t d : shape)
    a.push_back(d);
  return a;
}

ojson dimsJson(const std::array<uint32_t, 3> &dims) {
  return ojson::array({dims[0], dims[1], dims[2]});
}

ojson checkJson(const CheckResult &c, const char *reference) {
  ojson j;
  j["passed"] = c.passed;
  j["rel_err"] = c.relErr;
  j["max_abs_err"] = c.maxAbsErr;
  j["max_abs_ref"] = c.maxAbsRef;
  j["tolerance"] = {{"rel_err", c.relTol}, {"max_abs_err", c.maxAbsTol}};
  j["elements"] = c.elements;
  j["unwritten"] = c.unwritten;
  j["nonfinite"] = c.nonFinite;
  j["special_mismatch"] = c.specialMismatch;
  j["first_bad_index"] = c.firstBadIndex;
  j["reason"] = c.reason;
  j["reference"] = reference;
  return j;
}

/// The measurement options of the command line.
measure::Options measureOptions(const Options &opts) {
  measure::Options m = opts.timing;
  // The audits compare with the reference: none without checks.
  if (!opts.check)
    m.auditRuns = 0;
  return m;
}

/// The report's "time" of a measurement.
ojson timeJson(const measure::Measurement &m, const Options &opts) {
  const measure::Stats &s = m.stats;
  ojson t = {{"median_ms", s.medianMs},
             {"min_ms", s.minMs},
             {"max_ms", s.maxMs},
             {"mean_ms", s.meanMs},
             {"runs", m.runs},
             {"warmup", m.warmup},
             {"l2_flush_bytes", m.l2FlushBytes},
             {"stddev_ms", s.stddevMs},
             {"p10_ms", s.p10Ms},
             {"p90_ms", s.p90Ms},
             {"input_sets", m.inputSets},
             {"audited_runs", m.audits.size()},
             {"wall_ms", m.wallMs}};
  if (opts.timing.timeBudgetMs > 0) {
    t["time_budget_ms"] = int64_t(opts.timing.timeBudgetMs);
    t["budget_stopped"] = m.budgetStopped;
  }
  if (m.timedOut)
    t["timed_out"] = true;
  if (!m.errors.empty())
    t["errors"] = m.errors;
  return t;
}

/// Runs, checks and times kernels on one context and stream.
class Runner {
public:
  /// Called when a launch timed out, with the kernel's entry and the error:
  /// the GPU may still run the kernel and freeing anything would wait for
  /// it, so it must write the report and leave the process (main's does).
  using ContextLostFn =
      std::function<void(const ojson &entry, const std::string &error)>;

  Runner(CudaContext &ctx, Stream stream, const Manifest &manifest,
         const Options &opts, uint64_t seed, ContextLostFn onContextLost)
      : ctx(ctx), stream(stream), manifest(manifest), opts(opts), seed(seed),
        measurer(ctx, stream), onContextLost(std::move(onContextLost)) {}

  /// Runs `kernel`, filling `out`. Sets `passed` to false when the check
  /// failed. Returns a failure for CUDA (or other) errors.
  Status run(const KernelSpec &kernel, ojson &out, bool &passed);

private:
  /// The outputs of a kernel being checked: their parameter indices, their
  /// values after the first launch, their references and whether each
  /// passed its first check.
  struct Outputs {
    std::vector<size_t> indices;
    std::vector<std::vector<uint8_t>> first;
    std::vector<HostTensor> refs;
    std::vector<bool> firstPassed;
    Tolerance tolerance;
  };

  Expected<HostTensor> matmulReference(const KernelSpec &kernel,
                                       const std::vector<DevicePtr> &pointers);
  /// Copies every output back after the first launch, computes the
  /// references (cuBLAS for a graph of one matmul of two parameters, else
  /// the CPU evaluation of the ops graph) and fills out["check"].
  Status checkFirstLaunch(const KernelSpec &kernel,
                          const std::vector<DevicePtr> &pointers,
                          std::map<std::string, HostTensor> &inputs,
                          Outputs &outputs, ojson &out, bool &passed);
  /// Times `kernel` on `pointers` (kopt/Measure/Measure.h) and, when
  /// checking, audits timed runs: every output of an audited run against
  /// `outputs` (the first launch's values and references), filling
  /// out["time"] (and check.after_timing / check.audits); sets `passed` to
  /// false when an audit failed.
  Status time(const KernelSpec &kernel, const std::vector<DevicePtr> &pointers,
              const Outputs &outputs, ojson &out, bool &passed);

  CudaContext &ctx;
  Stream stream;
  const Manifest &manifest;
  const Options &opts;
  uint64_t seed;
  std::unique_ptr<Cublas> cublas;
  measure::Measurer measurer;
  ContextLostFn onContextLost;
};

Expected<HostTensor>
Runner::matmulReference(const KernelSpec &kernel,
                        const std::vector<DevicePtr> &pointers) {
  if (!cublas) {
    Expected<std::unique_ptr<Cublas>> c = Cublas::create(ctx);
    if (!c.ok())
      return c.status();
    cublas = c.take();
  }
  // The kernel's graph is one matmul of two parameters (see run()).
  const OpSpec &op = kernel.ops.front();
  const TensorSpec &a = *kernel.findParam(*op.operand("a"));
  const TensorSpec &result = *kernel.findParam(op.result);
  int64_t m = result.shape[0], n = result.shape[1];
  int64_t k = op.attrs.transposeA ? a.shape[0] : a.shape[1];
  DevicePtr aPtr = 0, bPtr = 0;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (kernel.params[i].name == *op.operand("a"))
      aPtr = pointers[i];
    if (kernel.params[i].name == *op.operand("b"))
      bPtr = pointers[i];
  }
  Expected<DeviceBuffer> refBuf = ctx.allocate(m * n * 4);
  if (!refBuf.ok())
    return refBuf.status();
  KOPT_RETURN_IF_ERROR(
      cublas->gemmRowMajorF32(m, n, k, op.attrs.transposeA, op.attrs.transposeB,
                              a.dtype, aPtr, bPtr, refBuf->get(), stream));
  KOPT_RETURN_IF_ERROR(ctx.synchronize(stream).withContext("cuBLAS reference"));
  std::vector<float> host(static_cast<size_t>(m * n));
  KOPT_RETURN_IF_ERROR(ctx.copyToHost(host.data(), refBuf->get(), m * n * 4));
  HostTensor ref;
  ref.shape = result.shape;
  ref.data.assign(host.begin(), host.end());
  return std::move(ref);
}

Status Runner::checkFirstLaunch(const KernelSpec &kernel,
                                const std::vector<DevicePtr> &pointers,
                                std::map<std::string, HostTensor> &inputs,
                                Outputs &outputs, ojson &out, bool &passed) {
  const std::vector<size_t> &indices = outputs.indices;
  outputs.first.resize(indices.size());
  outputs.refs.resize(indices.size());
  outputs.firstPassed.assign(indices.size(), false);
  for (size_t o = 0; o < indices.size(); ++o) {
    const TensorSpec &p = kernel.params[indices[o]];
    outputs.first[o].resize(static_cast<size_t>(p.numBytes()));
    KOPT_RETURN_IF_ERROR(ctx.copyToHost(outputs.first[o].data(),
                                        pointers[indices[o]], p.numBytes()));
  }
  const OpSpec *single = kernel.singleOp();
  bool useCublas = single && single->kind == OpKind::Matmul &&
                   kernel.findParam(*single->operand("a")) &&
                   kernel.findParam(*single->operand("b"));
  const char *referenceName = useCublas ? "cublas-gemmex-f32" : "cpu-float64";
  if (useCublas) {
    Expected<HostTensor> r = matmulReference(kernel, pointers);
    if (!r.ok())
      return r.status();
    outputs.refs.front() = r.take();
  } else {
    std::map<std::string, const HostTensor *> views;
    for (const auto &entry : inputs)
      views[entry.first] = &entry.second;
    Expected<std::map<std::string, HostTensor>> r =
        ref::evaluate(kernel, views);
    if (!r.ok())
      return r.status();
    for (size_t o = 0; o < indices.size(); ++o)
      outputs.refs[o] = std::move((*r)[kernel.params[indices[o]].name]);
  }
  // "check" is the first failing output's (or the first output's); with
  // several outputs "outputs" has each one's.
  ojson perOutput = ojson::object();
  std::optional<size_t> shown;
  for (size_t o = 0; o < indices.size(); ++o) {
    const TensorSpec &p = kernel.params[indices[o]];
    CheckResult c = checkOutput(outputs.first[o].data(), p.dtype,
                                outputs.refs[o].data.data(), p.numElements(),
                                outputs.tolerance);
    perOutput[p.name] = checkJson(c, referenceName);
    outputs.firstPassed[o] = c.passed;
    if (!c.passed && passed) {
      passed = false;
      shown = o;
    }
  }
  if (!indices.empty()) {
    out["check"] = perOutput[kernel.params[indices[shown.value_or(0)]].name];
    if (indices.size() > 1)
      out["check"]["outputs"] = perOutput;
  }
  return Status::success();
}

Status Runner::run(const KernelSpec &kernel, ojson &out, bool &passed) {
  passed = true;
  out["name"] = kernel.name;
  // "op": the op, or the chain "matmul+add+gelu"; "attrs": a single op's.
  out["op"] = kernel.opsName();
  out["class"] = kernelClassName(kernel.cls);
  if (const OpSpec *op = kernel.singleOp())
    out["attrs"] = ojson::parse(writeOpAttrs(*op), nullptr, false);
  out["ops"] = ojson::parse(writeOps(kernel), nullptr, false);
  ojson params = ojson::array();
  for (const TensorSpec &p : kernel.params)
    params.push_back({{"name", p.name},
                      {"role", roleName(p.role)},
                      {"dtype", dtypeName(p.dtype)},
                      {"shape", shapeJson(p.shape)},
                      {"bytes", p.numBytes()}});
  out["params"] = params;
  if (!kernel.tensorMaps.empty()) {
    // TMA: one CUtensorMap parameter per entry, after the params.
    ojson maps = ojson::array();
    for (const TensorMapSpec &m : kernel.tensorMaps)
      maps.push_back({{"tensor", m.tensor},
                      {"box", shapeJson(m.box)},
                      {"swizzle", m.swizzle}});
    out["tensor_maps"] = maps;
  }
  out["grid"] = dimsJson(kernel.grid);
  out["block"] = dimsJson(kernel.block);
  out["dynamic_shared_bytes"] = kernel.dynamicSharedBytes;
  // Placeholders, to keep the order of the fields.
  out["resources"] = nullptr;
  out["inputs"] = ojson::object();
  out["check"] = nullptr;
  out["time"] = nullptr;

  // Checks the PTX entry's parameter count against the manifest too.
  Expected<Function> fn = ctx.getFunction(manifest.ptxPath, kernel);
  if (!fn.ok())
    return fn.status();
  if (Expected<FunctionResources> r = ctx.getResources(*fn); r.ok())
    out["resources"] = {{"registers", r->registers},
                        {"local_bytes", r->localBytes},
                        {"static_shared_bytes", r->staticSharedBytes}};

  // Device buffers, inputs and poisoned outputs.
  std::vector<DeviceBuffer> buffers;
  std::vector<DevicePtr> pointers;
  std::map<std::string, HostTensor> inputs;
  ojson inputInfo = ojson::object();
  for (const TensorSpec &p : kernel.params) {
    Expected<DeviceBuffer> buf = ctx.allocate(p.numBytes());
    if (!buf.ok())
      return buf.status().withContext("parameter '" + p.name + "'");
    pointers.push_back(buf->get());
    if (p.role == Role::Input) {
      InputDistribution dist = inputDistribution(kernel, p);
      HostInput in =
          generateInput(p, dist, deriveSeed(seed, kernel.name, p.name));
      KOPT_RETURN_IF_ERROR(
          ctx.copyToDevice(buf->get(), in.bytes.data(), p.numBytes()));
      inputs[p.name] = std::move(in.values);
      inputInfo[p.name] = dist.describe();
    } else if (p.role == Role::Workspace) {
      // Zero before the first launch; split-K kernels leave it reusable.
      KOPT_RETURN_IF_ERROR(
          ctx.memsetAsync(buf->get(), 0, p.numBytes(), stream));
    } else {
      KOPT_RETURN_IF_ERROR(
          ctx.memsetAsync(buf->get(), 0xff, p.numBytes(), stream));
    }
    buffers.push_back(buf.take());
  }
  out["inputs"] = inputInfo;
  // Inputs copied and outputs poisoned before the launch.
  KOPT_RETURN_IF_ERROR(ctx.synchronizeContext());

  // The parameters, then the kernel's tensor maps (encoded for these
  // buffers once: every launch below reuses them).
  TensorMaps maps;
  Expected<ArgPack> pack = ctx.packArgs(kernel, pointers, maps, stream);
  if (!pack.ok())
    return pack.status();

  // One launch (under the measurement's watchdog), then the check.
  KOPT_RETURN_IF_ERROR(ctx.launch(*fn, kernel, pack->data(), stream));
  Expected<bool> finished =
      measure::waitForStream(ctx, stream, opts.timing.timeoutMs);
  if (!finished.ok())
    return finished.status().withContext("first launch of '" + kernel.name +
                                         "'");
  if (!*finished) {
    std::string error = "kernel '" + kernel.name +
                        "': the first launch did not finish within " +
                        std::to_string(int64_t(opts.timing.timeoutMs)) +
                        " ms; gave up on it (the GPU may still be running "
                        "it, so the CUDA context is lost)";
    onContextLost(out, error);
    return Status::error(error);
  }

  Outputs outputs;
  for (size_t i = 0; i < kernel.params.size(); ++i)
    if (kernel.params[i].role == Role::Output)
      outputs.indices.push_back(i);
  // By the output's dtype; a matmul with tf32 gets f16's (Check.h), while
  // its reference stays the exact f32 product (cuBLAS with
  // CUBLAS_COMPUTE_32F in the default math mode does not use TF32).
  outputs.tolerance = toleranceFor(kernel);
  if (opts.check)
    KOPT_RETURN_IF_ERROR(
        checkFirstLaunch(kernel, pointers, inputs, outputs, out, passed));
  inputs.clear(); // free host memory before timing

  out["bytes"] = kernel.totalParamBytes();
  if (opts.time)
    KOPT_RETURN_IF_ERROR(time(kernel, pointers, outputs, out, passed));
  return Status::success();
}

Status Runner::time(const KernelSpec &kernel,
                    const std::vector<DevicePtr> &pointers,
                    const Outputs &outputs, ojson &out, bool &passed) {
  // The audited timed runs (kopt/Measure/Measure.h) get every output: each
  // is compared with the first launch's and, when it differs, checked
  // against its reference again (a change beyond rounding points at a
  // race). An output identical to the first launch's passes as its first
  // check did.
  bool firstPassed = passed;
  std::vector<ojson> audits;
  measure::AuditFn audit = [&](const measure::AuditRun &run) {
    measure::AuditVerdict verdict;
    ojson record = {{"run", run.run + 1}, {"set", run.set}};
    bool identical = true;
    // The first failing differing output's check (or the first differing
    // one's), as the record shows it.
    ojson shown;
    for (const measure::AuditedOutput &o : run.outputs) {
      auto it =
          std::find(outputs.indices.begin(), outputs.indices.end(), o.index);
      if (it == outputs.indices.end())
        continue;
      size_t k = it - outputs.indices.begin();
      const TensorSpec &p = kernel.params[o.index];
      bool several = outputs.indices.size() > 1;
      std::string named = several ? "output '" + p.name + "': " : "";
      if (o.bytes == outputs.first[k]) {
        if (!outputs.firstPassed[k] && verdict.passed)
          verdict = {false,
                     named + "the first run's output, which failed the check"};
        continue;
      }
      identical = false;
      CheckResult c =
          checkOutput(o.bytes.data(), p.dtype, outputs.refs[k].data.data(),
                      p.numElements(), outputs.tolerance);
      if (shown.is_null() || (!c.passed && shown["passed"] == true)) {
        shown = ojson::object();
        shown["passed"] = c.passed;
        shown["rel_err"] = c.relErr;
        shown["reason"] = c.reason;
        if (several)
          shown["output"] = p.name;
      }
      if (!c.passed && verdict.passed)
        verdict = {false, named + c.reason};
    }
    record["identical"] = identical;
    record["passed"] = verdict.passed;
    if (!identical) {
      for (auto it = shown.begin(); it != shown.end(); ++it)
        if (it.key() != "passed")
          record[it.key()] = it.value();
    }
    audits.push_back(record);
    return verdict;
  };
  Expected<measure::Measurement> m = measurer.measureKernel(
      manifest, kernel, pointers, measureOptions(opts),
      opts.check && !outputs.indices.empty() ? audit : measure::AuditFn());
  if (!m.ok())
    return m.status();
  out["time"] = timeJson(*m, opts);
  if (m->timedOut) {
    onContextLost(out, m->errors.back());
    return Status::error(m->errors.back());
  }
  double median = m->stats.medianMs;
  int64_t bytes = kernel.totalParamBytes();
  out["gbps"] = median > 0 ? double(bytes) / (median * 1e6) : 0.0;
  if (const OpSpec *mm = kernel.findOp(OpKind::Matmul)) {
    // The matmul's flops (2 M N K); an epilogue's are not counted.
    const TensorSpec &a = *kernel.findValue(*mm->operand("a"));
    const TensorSpec &c = *kernel.findValue(mm->result);
    int64_t k = mm->attrs.transposeA ? a.shape[0] : a.shape[1];
    int64_t flops = 2 * c.shape[0] * c.shape[1] * k;
    out["flops"] = flops;
    out["gflops"] = median > 0 ? double(flops) / (median * 1e6) : 0.0;
  }

  if (opts.check && !audits.empty()) {
    // "after_timing": the last timed run's audit; "audits": all of them
    // when there are more.
    ojson after = audits.back();
    after.erase("run");
    after.erase("set");
    out["check"]["after_timing"] = after;
    if (audits.size() > 1)
      out["check"]["audits"] = audits;
  }
  // A failed audit (or a bad time) fails a kernel whose first check
  // passed.
  if (opts.check && !m->valid() && firstPassed) {
    passed = false;
    out["check"]["passed"] = false;
    std::string reason = m->errors.front();
    for (const measure::AuditRecord &a : m->audits)
      if (!a.passed) {
        reason = (a.run + 1 == m->runs
                      ? std::string("after the timed runs: ")
                      : "in timed run " + std::to_string(a.run + 1) + " of " +
                            std::to_string(m->runs) + ": ") +
                 a.reason;
        break;
      }
    out["check"]["reason"] = reason;
  }
  return Status::success();
}

std::string summaryLine(const ojson &k) {
  char buf[512];
  std::string line =
      k["name"].get<std::string>() + " (" + k["op"].get<std::string>() + ")";
  if (!k["check"].is_null()) {
    const ojson &c = k["check"];
    std::snprintf(buf, sizeof(buf), ": check %s rel_err=%.3g max_abs_err=%.3g",
                  c["passed"].get<bool>() ? "passed" : "FAILED",
                  c["rel_err"].get<double>(), c["max_abs_err"].get<double>());
    line += buf;
    if (!c["passed"].get<bool>())
      line += " (" + c["reason"].get<std::string>() + ")";
  }
  if (!k["time"].is_null()) {
    const ojson &t = k["time"];
    std::snprintf(buf, sizeof(buf),
                  "; median %.4f ms (min %.4f, max %.4f), "
                  "%.1f GB/s",
                  t["median_ms"].get<double>(), t["min_ms"].get<double>(),
                  t["max_ms"].get<double>(), k["gbps"].get<double>());
    line += buf;
    if (k.contains("gflops")) {
      std::snprintf(buf, sizeof(buf), ", %.1f GFLOP/s",
                    k["gflops"].get<double>());
      line += buf;
    }
  }
  return line;
}

/// The report's header for `manifestPath`, before anything ran.
ojson reportHeader(const Options &opts, const std::string &manifestPath) {
  ojson report;
  report["tool"] = "kopt-run";
  report["manifest"] = manifestPath;
  report["ptx"] = nullptr;
  report["chip"] = nullptr;
  report["device"] = nullptr;
  report["seed"] = nullptr;
  const measure::Options &timing = opts.timing;
  report["runs"] = timing.runs;
  report["warmup"] = timing.warmup;
  report["input_sets"] = timing.inputSets;
  report["audit_runs"] = opts.check && opts.time ? timing.auditRuns : 0;
  report["timeout_ms"] = int64_t(timing.timeoutMs);
  if (timing.timeBudgetMs > 0) {
    report["time_budget_ms"] = int64_t(timing.timeBudgetMs);
    report["min_runs"] = timing.minRuns;
  }
  report["check_enabled"] = opts.check;
  report["time_enabled"] = opts.time;
  report["kernels"] = ojson::array();
  report["passed"] = nullptr;
  report["exit_code"] = kExitError;
  return report;
}

/// Where a report goes: `finish(report, exitCode, error)` records the exit
/// code and error in it, writes it and returns the exit code (kExitError when
/// it could not be written).
using FinishFn =
    std::function<int(ojson &report, int exitCode, const std::string &error)>;

/// The device the runs use, created on first use (a manifest error needs no
/// GPU), with its stream.
struct Device {
  std::unique_ptr<CudaContext> ctx;
  Stream stream{};
  ojson info;
};

/// Loads `manifestPath`, runs its selected kernels on `device` (created when
/// null) and finishes `report`. Sets `stop` when the context may be unusable
/// (a failed launch or CUDA call): nothing more should run on it.
int runManifest(const Options &opts, const std::string &manifestPath,
                uint64_t seed, std::optional<Device> &device,
                const FinishFn &finish, bool &stop) {
  ojson report = reportHeader(opts, manifestPath);
  Expected<Manifest> manifest = loadManifest(manifestPath);
  if (!manifest.ok())
    return finish(report, kExitError, manifest.error());
  // Nor the PTX the manifest names.
  if (!opts.outPath.empty() && samePath(opts.outPath, manifest->ptxPath))
    return finish(report, kExitError,
                  "the report '" + opts.outPath +
                      "' would overwrite the manifest's PTX; choose another "
                      "-o file");
  report["ptx"] = manifest->ptxPath;
  report["chip"] = manifest->chip;
  std::vector<const KernelSpec *> selected;
  if (opts.kernels.empty()) {
    for (const KernelSpec &k : manifest->kernels)
      selected.push_back(&k);
  } else {
    for (const std::string &name : opts.kernels) {
      const KernelSpec *k = manifest->findKernel(name);
      if (!k) {
        std::string names;
        for (const KernelSpec &kk : manifest->kernels)
          names += (names.empty() ? "" : ", ") + kk.name;
        return finish(report, kExitError,
                      "no kernel named '" + name + "' in " + manifestPath +
                          " (kernels: " + (names.empty() ? "none" : names) +
                          ")");
      }
      if (std::find(selected.begin(), selected.end(), k) == selected.end())
        selected.push_back(k);
    }
  }
  if (selected.empty())
    return finish(report, kExitError,
                  manifestPath + ": the manifest has no kernels");
  report["seed"] = seed;

  if (!device) {
    Expected<std::unique_ptr<CudaContext>> ctxOr =
        CudaContext::create(opts.device);
    if (!ctxOr.ok()) {
      stop = true;
      return finish(report, kExitError, ctxOr.error());
    }
    Device d;
    d.ctx = ctxOr.take();
    Expected<Stream> stream = d.ctx->createStream();
    if (!stream.ok()) {
      stop = true;
      return finish(report, kExitError, stream.error());
    }
    d.stream = *stream;
    const DeviceInfo &dev = d.ctx->device();
    d.info = {{"ordinal", dev.ordinal},
              {"name", dev.name},
              {"compute_capability",
               std::to_string(dev.ccMajor) + "." + std::to_string(dev.ccMinor)},
              {"sm_count", dev.smCount},
              {"l2_bytes", dev.l2CacheBytes},
              {"memory_bytes", dev.totalMemoryBytes},
              {"driver_version", dev.driverVersion}};
    device = std::move(d);
  }
  CudaContext &ctx = *device->ctx;
  const DeviceInfo &dev = ctx.device();
  std::string deviceArch =
      "sm_" + std::to_string(dev.ccMajor) + std::to_string(dev.ccMinor);
  if (manifest->chip.rfind(deviceArch, 0) != 0)
    std::fprintf(stderr,
                 "kopt-run: warning: the manifest targets %s but device %d "
                 "(%s) is %s\n",
                 manifest->chip.c_str(), dev.ordinal, dev.name.c_str(),
                 deviceArch.c_str());
  report["device"] = device->info;

  std::string error;
  bool allPassed = true;
  {
    // A launch that timed out may still run: write the report and leave at
    // once, without freeing anything or releasing the context (either would
    // wait for the kernel).
    auto onContextLost = [&](const ojson &entry, const std::string &message) {
      ojson e = entry;
      e["error"] = message;
      report["kernels"].push_back(e);
      std::string log = ctx.jitInfoLog(manifest->ptxPath);
      if (!log.empty())
        report["jit_info_log"] = log;
      int code = finish(report, kExitError, message);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(code);
    };
    Runner runner(ctx, device->stream, *manifest, opts, seed, onContextLost);
    for (size_t i = 0; i < selected.size(); ++i) {
      const KernelSpec &k = *selected[i];
      ojson entry;
      bool passed = true;
      Status status = runner.run(k, entry, passed);
      if (!status.ok()) {
        entry["error"] = status.message();
        report["kernels"].push_back(entry);
        // Name the kernel once (runtime errors often name it already).
        std::string named = "kernel '" + k.name + "'";
        error = status.message().rfind(named, 0) == 0
                    ? status.message()
                    : named + ": " + status.message();
        // A failed launch can leave the context unusable: stop here.
        stop = true;
        break;
      }
      allPassed = allPassed && passed;
      std::fprintf(stderr, "kopt-run: [%zu/%zu] %s\n", i + 1, selected.size(),
                   summaryLine(entry).c_str());
      report["kernels"].push_back(entry);
    }
  }
  std::string log = ctx.jitInfoLog(manifest->ptxPath);
  if (!log.empty())
    report["jit_info_log"] = log;
  if (!error.empty())
    return finish(report, kExitError, error);
  if (opts.check)
    report["passed"] = allPassed;
  return finish(report, opts.check && !allPassed ? kExitFailedCheck : 0, "");
}

/// Whether the report file `path` can be written, without truncating it yet
/// (it is written once the manifest and the PTX have been read). An
/// existing file is opened for appending, which changes nothing; a new one
/// is not created yet: its folder must be writable.
bool canWrite(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec))
    return static_cast<bool>(std::ofstream(path, std::ios::app));
  fs::path dir = fs::path(path).parent_path();
  return ::access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
}

/// The manifests a --batch file lists: one path per line; blank lines and
/// lines starting with '#' are skipped.
Expected<std::vector<std::string>> readBatch(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Status::error("cannot read the batch file '" + path +
                         "': " + std::strerror(errno));
  std::vector<std::string> paths;
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#')
      continue;
    size_t e = line.find_last_not_of(" \t\r");
    paths.push_back(line.substr(b, e - b + 1));
  }
  if (paths.empty())
    return Status::error("the batch file '" + path + "' lists no manifest");
  return paths;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  bool help = false;
  if (std::optional<std::string> err = parseArgs(argc, argv, opts, help)) {
    printError(*err);
    std::fprintf(stderr, "%s", kUsage);
    return kExitError;
  }
  if (help) {
    std::printf("%s", kUsage);
    return 0;
  }
  uint64_t seed =
      opts.seed
          ? *opts.seed
          : static_cast<uint64_t>(
                std::chrono::system_clock::now().time_since_epoch().count()) %
                1000000000000ull;
  std::fprintf(stderr, "kopt-run: seed %" PRIu64 "\n", seed);
  std::optional<Device> device;

  if (!opts.batchPath.empty()) {
    // --batch: every manifest's report, compact, as one line of the
    // --jsonl file, appended and flushed as soon as it is done, on one
    // context. A manifest that stops the context ends the batch: the
    // manifests after it get no line.
    Expected<std::vector<std::string>> paths = readBatch(opts.batchPath);
    if (!paths.ok()) {
      printError(paths.error());
      return kExitError;
    }
    for (const std::string &p : *paths)
      if (samePath(opts.jsonlPath, p)) {
        printError("the report '" + opts.jsonlPath +
                   "' would overwrite the manifest '" + p + "'");
        return kExitError;
      }
    std::FILE *out = std::fopen(opts.jsonlPath.c_str(), "a");
    if (!out) {
      printError("cannot write '" + opts.jsonlPath +
                 "': " + std::strerror(errno));
      return kExitError;
    }
    FinishFn finish = [&](ojson &report, int exitCode,
                          const std::string &error) {
      if (!error.empty()) {
        printError(error);
        report["error"] = error;
      }
      report["exit_code"] = exitCode;
      std::string line = report.dump() + "\n";
      if (std::fwrite(line.data(), 1, line.size(), out) != line.size() ||
          std::fflush(out) != 0) {
        printError("cannot write '" + opts.jsonlPath + "'");
        return kExitError;
      }
      return exitCode;
    };
    int worst = 0;
    for (const std::string &p : *paths) {
      bool stop = false;
      int code = runManifest(opts, p, seed, device, finish, stop);
      worst = std::max(worst, code);
      if (stop)
        break;
    }
    std::fclose(out);
    return worst;
  }

  // From here on every exit writes the JSON report (with an "error" field on
  // errors), so that scripts always find one.
  if (!opts.outPath.empty()) {
    // Opening the report truncates it: never let that be the manifest.
    if (samePath(opts.outPath, opts.manifestPath)) {
      printError("the report '" + opts.outPath +
                 "' would overwrite the manifest; choose another -o file");
      return kExitError;
    }
    if (!canWrite(opts.outPath)) {
      printError("cannot write '" + opts.outPath +
                 "': " + std::strerror(errno));
      return kExitError;
    }
  }
  FinishFn finish = [&](ojson &report, int exitCode,
                        const std::string &error) {
    if (!error.empty()) {
      printError(error);
      report["error"] = error;
    }
    report["exit_code"] = exitCode;
    std::string text = report.dump(2) + "\n";
    if (opts.outPath.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return exitCode;
    }
    std::ofstream outFile(opts.outPath, std::ios::trunc);
    outFile << text;
    outFile.close();
    if (!outFile) {
      printError("cannot write '" + opts.outPath + "'");
      return kExitError;
    }
    return exitCode;
  };
  bool stop = false;
  return runManifest(opts, opts.manifestPath, seed, device, finish, stop);
}
