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
#include "Runner.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Measure/Measure.h"
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
using kopt::run::Runner;
using kopt::run::summaryLine;
namespace measure = kopt::measure;
using kopt::run::ojson;

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

/// Records the exit code and error (printed on stderr) in `report`.
void stamp(ojson &report, int exitCode, const std::string &error) {
  if (!error.empty()) {
    printError(error);
    report["error"] = error;
  }
  report["exit_code"] = exitCode;
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
  // Nor the PTX the manifest names: say so and write nothing.
  if (!opts.outPath.empty() && samePath(opts.outPath, manifest->ptxPath)) {
    printError("the report '" + opts.outPath +
               "' would overwrite the manifest's PTX; choose another -o file");
    return kExitError;
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
      stamp(report, exitCode, error);
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
    stamp(report, exitCode, error);
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
