//===- Runner.cpp - Run, check and time one kernel of a manifest ----------===//
//
// See Runner.h.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "kopt/Runtime/ArgPack.h"
#include "kopt/Runtime/Float16.h"
#include "kopt/Runtime/Inputs.h"
#include "kopt/Runtime/Reference.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

namespace kopt::run {

using namespace kopt::rt;

namespace {

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

} // namespace

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
  if (kernel.cluster != std::array<uint32_t, 3>{1, 1, 1})
    out["cluster"] = dimsJson(kernel.cluster);
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

} // namespace kopt::run
