//===- kopt-run.cpp - Check and time the kernels of a launch manifest -----===//
//
//   kopt-run MANIFEST.json [--kernel NAME]... [--runs N] [--warmup N]
//            [--seed S] [--device N] [--no-time] [--no-check] [-o OUT.json]
//
// For each kernel of the manifest (or each one named with --kernel): fresh
// random inputs, outputs poisoned with 0xFF bytes (NaN in every dtype), one
// launch, a check against an independent reference (CPU float64, or cuBLAS
// for matmul), then timing with CUDA events: warm-up launches, then per run an
// L2 flush (cuMemsetD8Async over 256 MiB), start event, launch, end event.
// A kernel with TMA tensor maps gets them encoded for its buffers once, before
// the first launch. Prints one JSON document (see docs/runtime.md for the
// fields).
//
// Exit code: 0 when every check passed (or --no-check), 1 when a check
// failed, 2 on usage, manifest or CUDA errors ("kopt-run: error: ..." on
// stderr; the JSON, if any kernel ran, is still written).
//
//===----------------------------------------------------------------------===//

#include "kopt/Manifest/Manifest.h"
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
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kopt::rt;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int64_t kL2FlushBytes = 256ll << 20; // 256 MiB
constexpr int kExitFailedCheck = 1;
constexpr int kExitError = 2;

const char *const kUsage =
    R"(usage: kopt-run MANIFEST.json [options]

Checks and times the kernels of a kopt launch manifest on the GPU.

options:
  --kernel NAME   run only this kernel (repeatable; default: all kernels)
  --runs N        timed runs per kernel (default 100, at least 1)
  --warmup N      warm-up launches before timing (default 10)
  --seed S        seed of the random inputs (default: from the clock; printed)
  --device N      CUDA device ordinal (default 0)
  --no-time       check only
  --no-check      time only
  -o FILE         write the JSON report to FILE (default: stdout)
  -h, --help      show this help

exit code: 0 all checks passed, 1 a check failed, 2 usage/manifest/CUDA error
)";

void printError(const std::string &message) {
  std::fprintf(stderr, "kopt-run: error: %s\n", message.c_str());
}

struct Options {
  std::string manifestPath;
  std::vector<std::string> kernels;
  int64_t runs = 100;
  int64_t warmup = 10;
  std::optional<uint64_t> seed;
  int device = 0;
  bool time = true;
  bool check = true;
  std::string outPath;
};

/// Parses a non-negative integer at most `max`.
std::optional<uint64_t> parseUnsigned(const std::string &text, uint64_t max) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max)
    return std::nullopt;
  return v;
}

/// Parses the command line; on a usage error returns its message.
std::optional<std::string> parseArgs(int argc, char **argv, Options &opts,
                                     bool &help) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inlineValue;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        inlineValue = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    bool takesValue = arg == "--kernel" || arg == "--runs" ||
                      arg == "--warmup" || arg == "--seed" ||
                      arg == "--device" || arg == "-o";
    std::string value;
    if (takesValue) {
      if (inlineValue) {
        value = *inlineValue;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return "option " + arg + " needs a value";
      }
    } else if (inlineValue) {
      return "option " + arg + " takes no value";
    }

    if (arg == "-h" || arg == "--help") {
      help = true;
    } else if (arg == "--kernel") {
      opts.kernels.push_back(value);
    } else if (arg == "--runs") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v || *v < 1)
        return "--runs needs an integer in [1, 1000000], got '" + value + "'";
      opts.runs = static_cast<int64_t>(*v);
    } else if (arg == "--warmup") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v)
        return "--warmup needs an integer in [0, 1000000], got '" + value + "'";
      opts.warmup = static_cast<int64_t>(*v);
    } else if (arg == "--seed") {
      std::optional<uint64_t> v = parseUnsigned(value, UINT64_MAX);
      if (!v)
        return "--seed needs a non-negative integer, got '" + value + "'";
      opts.seed = *v;
    } else if (arg == "--device") {
      std::optional<uint64_t> v = parseUnsigned(value, 1024);
      if (!v)
        return "--device needs a device ordinal, got '" + value + "'";
      opts.device = static_cast<int>(*v);
    } else if (arg == "--no-time") {
      opts.time = false;
    } else if (arg == "--no-check") {
      opts.check = false;
    } else if (arg == "-o") {
      opts.outPath = value;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (opts.manifestPath.empty()) {
      opts.manifestPath = arg;
    } else {
      return "more than one manifest given ('" + opts.manifestPath + "' and '" +
             arg + "')";
    }
  }
  if (!help && opts.manifestPath.empty())
    return std::string("no manifest given");
  return std::nullopt;
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

struct TimeStats {
  double medianMs = 0, minMs = 0, maxMs = 0, meanMs = 0;
};

TimeStats summarize(std::vector<double> ms) {
  TimeStats s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.minMs = ms.front();
  s.maxMs = ms.back();
  s.medianMs = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  double sum = 0;
  for (double v : ms)
    sum += v;
  s.meanMs = sum / double(n);
  return s;
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

/// Destroys events on scope exit.
struct EventSet {
  CudaContext &ctx;
  std::vector<Event> events;
  ~EventSet() {
    for (Event e : events)
      (void)ctx.destroyEvent(e);
  }
};

/// Runs, checks and times kernels on one context and stream.
class Runner {
public:
  Runner(CudaContext &ctx, Stream stream, const Manifest &manifest,
         const Options &opts, uint64_t seed)
      : ctx(ctx), stream(stream), manifest(manifest), opts(opts), seed(seed) {}

  /// Runs `kernel`, filling `out`. Sets `passed` to false when the check
  /// failed. Returns a failure for CUDA (or other) errors.
  Status run(const KernelSpec &kernel, ojson &out, bool &passed);

private:
  /// The outputs of a kernel being checked: their parameter indices, their
  /// values after the first launch and their references.
  struct Outputs {
    std::vector<size_t> indices;
    std::vector<std::vector<uint8_t>> first;
    std::vector<HostTensor> refs;
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
  /// Warm-up launches, then opts.runs timed runs, each after an L2 flush:
  /// out["time"], "gbps" and, with a matmul, "flops" and "gflops".
  Status timeKernel(const KernelSpec &kernel, Function fn, void **args,
                    ojson &out);
  /// Checks the outputs again after the timed runs (a changing result points
  /// at a race): out["check"]["after_timing"].
  Status checkAfterTiming(const KernelSpec &kernel,
                          const std::vector<DevicePtr> &pointers,
                          const Outputs &outputs, ojson &out, bool &passed);

  CudaContext &ctx;
  Stream stream;
  const Manifest &manifest;
  const Options &opts;
  uint64_t seed;
  std::unique_ptr<Cublas> cublas;
  DeviceBuffer flush;
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

Status Runner::checkAfterTiming(const KernelSpec &kernel,
                                const std::vector<DevicePtr> &pointers,
                                const Outputs &outputs, ojson &out,
                                bool &passed) {
  if (outputs.indices.empty())
    return Status::success();
  ojson after;
  bool identical = true;
  for (size_t o = 0; o < outputs.indices.size(); ++o) {
    const TensorSpec &p = kernel.params[outputs.indices[o]];
    std::vector<uint8_t> last(outputs.first[o].size());
    KOPT_RETURN_IF_ERROR(ctx.copyToHost(
        last.data(), pointers[outputs.indices[o]], p.numBytes()));
    if (last == outputs.first[o])
      continue;
    identical = false;
    CheckResult c =
        checkOutput(last.data(), p.dtype, outputs.refs[o].data.data(),
                    p.numElements(), outputs.tolerance);
    if (after.is_null() || (!c.passed && after["passed"] == true)) {
      after["passed"] = c.passed;
      after["rel_err"] = c.relErr;
      after["reason"] = c.reason;
      if (outputs.indices.size() > 1)
        after["output"] = p.name;
    }
    if (!c.passed && passed) {
      passed = false;
      out["check"]["passed"] = false;
      out["check"]["reason"] = "after the timed runs: " + c.reason;
    }
  }
  ojson record;
  record["identical"] = identical;
  if (identical) {
    record["passed"] = out["check"]["passed"];
  } else {
    for (auto it = after.begin(); it != after.end(); ++it)
      record[it.key()] = it.value();
  }
  out["check"]["after_timing"] = record;
  return Status::success();
}

Status Runner::timeKernel(const KernelSpec &kernel, Function fn, void **args,
                          ojson &out) {
  if (!flush.get()) {
    Expected<DeviceBuffer> f = ctx.allocate(kL2FlushBytes);
    if (!f.ok())
      return f.status().withContext("L2 flush buffer");
    flush = f.take();
  }
  for (int64_t i = 0; i < opts.warmup; ++i)
    KOPT_RETURN_IF_ERROR(ctx.launch(fn, kernel, args, stream));
  KOPT_RETURN_IF_ERROR(
      ctx.synchronize(stream).withContext("warm-up of '" + kernel.name + "'"));

  EventSet events{ctx, {}};
  for (int64_t i = 0; i < 2 * opts.runs; ++i) {
    Expected<Event> e = ctx.createEvent();
    if (!e.ok())
      return e.status();
    events.events.push_back(*e);
  }
  for (int64_t i = 0; i < opts.runs; ++i) {
    KOPT_RETURN_IF_ERROR(
        ctx.memsetAsync(flush.get(), 0, kL2FlushBytes, stream));
    KOPT_RETURN_IF_ERROR(ctx.record(events.events[2 * i], stream));
    KOPT_RETURN_IF_ERROR(ctx.launch(fn, kernel, args, stream));
    KOPT_RETURN_IF_ERROR(ctx.record(events.events[2 * i + 1], stream));
  }
  KOPT_RETURN_IF_ERROR(ctx.synchronize(stream).withContext("timed runs of '" +
                                                           kernel.name + "'"));
  std::vector<double> ms;
  for (int64_t i = 0; i < opts.runs; ++i) {
    Expected<float> t =
        ctx.elapsedMs(events.events[2 * i], events.events[2 * i + 1]);
    if (!t.ok())
      return t.status();
    ms.push_back(*t);
  }
  TimeStats s = summarize(ms);
  out["time"] = {{"median_ms", s.medianMs},
                 {"min_ms", s.minMs},
                 {"max_ms", s.maxMs},
                 {"mean_ms", s.meanMs},
                 {"runs", opts.runs},
                 {"warmup", opts.warmup},
                 {"l2_flush_bytes", kL2FlushBytes}};
  out["gbps"] = s.medianMs > 0
                    ? double(kernel.totalParamBytes()) / (s.medianMs * 1e6)
                    : 0.0;
  if (const OpSpec *mm = kernel.findOp(OpKind::Matmul)) {
    // The matmul's flops (2 M N K); an epilogue's are not counted.
    const TensorSpec &a = *kernel.findValue(*mm->operand("a"));
    const TensorSpec &c = *kernel.findValue(mm->result);
    int64_t k = mm->attrs.transposeA ? a.shape[0] : a.shape[1];
    int64_t flops = 2 * c.shape[0] * c.shape[1] * k;
    out["flops"] = flops;
    out["gflops"] = s.medianMs > 0 ? double(flops) / (s.medianMs * 1e6) : 0.0;
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

  // One launch, then the check.
  KOPT_RETURN_IF_ERROR(ctx.launch(*fn, kernel, pack->data(), stream));
  KOPT_RETURN_IF_ERROR(ctx.synchronize(stream).withContext("first launch of '" +
                                                           kernel.name + "'"));

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

  int64_t bytes = kernel.totalParamBytes();
  out["bytes"] = bytes;
  if (opts.time) {
    KOPT_RETURN_IF_ERROR(timeKernel(kernel, *fn, pack->data(), out));
    // The output after the timed runs should still pass: a change beyond
    // rounding points at a race.
    if (opts.check)
      KOPT_RETURN_IF_ERROR(
          checkAfterTiming(kernel, pointers, outputs, out, passed));
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

  // From here on every exit writes the JSON report (with an "error" field on
  // errors), so that scripts always find one.
  std::ofstream outFile;
  if (!opts.outPath.empty()) {
    // Opening the report truncates it: never let that be the manifest.
    if (samePath(opts.outPath, opts.manifestPath)) {
      printError("the report '" + opts.outPath +
                 "' would overwrite the manifest; choose another -o file");
      return kExitError;
    }
    // Check that the report can be written without truncating anything yet: it
    // is written at the end, once the manifest and the PTX have been read.
    // (An existing file is opened for appending, which changes nothing; a new
    // one is not created yet: its folder must be writable.)
    namespace fs = std::filesystem;
    std::error_code ec;
    bool writable;
    if (fs::exists(opts.outPath, ec)) {
      writable = static_cast<bool>(std::ofstream(opts.outPath, std::ios::app));
    } else {
      fs::path dir = fs::path(opts.outPath).parent_path();
      writable = ::access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
    }
    if (!writable) {
      printError("cannot write '" + opts.outPath +
                 "': " + std::strerror(errno));
      return kExitError;
    }
  }
  ojson report;
  report["tool"] = "kopt-run";
  report["manifest"] = opts.manifestPath;
  report["ptx"] = nullptr;
  report["chip"] = nullptr;
  report["device"] = nullptr;
  report["seed"] = nullptr;
  report["runs"] = opts.runs;
  report["warmup"] = opts.warmup;
  report["check_enabled"] = opts.check;
  report["time_enabled"] = opts.time;
  report["kernels"] = ojson::array();
  report["passed"] = nullptr;
  report["exit_code"] = kExitError;
  auto finish = [&](int exitCode, const std::string &error) {
    if (!error.empty()) {
      printError(error);
      report["error"] = error;
    }
    report["exit_code"] = exitCode;
    std::string text = report.dump(2) + "\n";
    if (!opts.outPath.empty())
      outFile.open(opts.outPath, std::ios::trunc);
    if (outFile.is_open()) {
      outFile << text;
      outFile.close();
      if (!outFile) {
        printError("cannot write '" + opts.outPath + "'");
        return kExitError;
      }
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return exitCode;
  };

  Expected<Manifest> manifest = loadManifest(opts.manifestPath);
  if (!manifest.ok())
    return finish(kExitError, manifest.error());
  {
    // Nor the PTX the manifest names.
    if (!opts.outPath.empty() && samePath(opts.outPath, manifest->ptxPath)) {
      printError(
          "the report '" + opts.outPath +
          "' would overwrite the manifest's PTX; choose another -o file");
      return kExitError;
    }
  }
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
        return finish(kExitError, "no kernel named '" + name + "' in " +
                                      opts.manifestPath + " (kernels: " +
                                      (names.empty() ? "none" : names) + ")");
      }
      if (std::find(selected.begin(), selected.end(), k) == selected.end())
        selected.push_back(k);
    }
  }
  if (selected.empty())
    return finish(kExitError,
                  opts.manifestPath + ": the manifest has no kernels");

  uint64_t seed =
      opts.seed
          ? *opts.seed
          : static_cast<uint64_t>(
                std::chrono::system_clock::now().time_since_epoch().count()) %
                1000000000000ull;
  std::fprintf(stderr, "kopt-run: seed %" PRIu64 "\n", seed);
  report["seed"] = seed;

  Expected<std::unique_ptr<CudaContext>> ctxOr =
      CudaContext::create(opts.device);
  if (!ctxOr.ok())
    return finish(kExitError, ctxOr.error());
  std::unique_ptr<CudaContext> ctx = ctxOr.take();
  const DeviceInfo &dev = ctx->device();
  std::string deviceArch =
      "sm_" + std::to_string(dev.ccMajor) + std::to_string(dev.ccMinor);
  if (manifest->chip.rfind(deviceArch, 0) != 0)
    std::fprintf(stderr,
                 "kopt-run: warning: the manifest targets %s but device %d "
                 "(%s) is %s\n",
                 manifest->chip.c_str(), dev.ordinal, dev.name.c_str(),
                 deviceArch.c_str());
  report["device"] = {{"ordinal", dev.ordinal},
                      {"name", dev.name},
                      {"compute_capability", std::to_string(dev.ccMajor) + "." +
                                                 std::to_string(dev.ccMinor)},
                      {"sm_count", dev.smCount},
                      {"l2_bytes", dev.l2CacheBytes},
                      {"memory_bytes", dev.totalMemoryBytes},
                      {"driver_version", dev.driverVersion}};

  std::string error;
  bool allPassed = true;
  {
    Expected<Stream> stream = ctx->createStream();
    if (!stream.ok())
      return finish(kExitError, stream.error());
    Runner runner(*ctx, *stream, *manifest, opts, seed);
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
        break;
      }
      allPassed = allPassed && passed;
      std::fprintf(stderr, "kopt-run: [%zu/%zu] %s\n", i + 1, selected.size(),
                   summaryLine(entry).c_str());
      report["kernels"].push_back(entry);
    }
    if (error.empty())
      (void)ctx->destroyStream(*stream);
  }
  std::string log = ctx->jitInfoLog(manifest->ptxPath);
  if (!log.empty())
    report["jit_info_log"] = log;
  if (!error.empty())
    return finish(kExitError, error);
  if (opts.check)
    report["passed"] = allPassed;
  return finish(opts.check && !allPassed ? kExitFailedCheck : 0, "");
}
