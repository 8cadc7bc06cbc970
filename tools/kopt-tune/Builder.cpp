//===- Builder.cpp - kopt-tune's builder: kopt_compile, then ptxas -v -----===//
//
// See Tune.h. Each candidate gets <work>/<kernel>/<n>.schedule.json ({kernel:
// schedule}), <n>.ptx and <n>.json (the manifest); ptxas -v gives the
// kernel's registers, spills and static shared memory, and a candidate that
// spills, or whose shared memory (static + the manifest's dynamic) exceeds
// the target's per-block limit, is rejected before any GPU time is spent.
//
//===----------------------------------------------------------------------===//

#include "Tune.h"

#include "kopt-c/kopt.h"

#include "llvm/Support/Program.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace kopt::tune {

namespace fs = std::filesystem;
using search::Candidate;
using search::Task;

std::string findPtxas() {
  auto exec = [](const std::string &p) {
    return !p.empty() && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char *p = std::getenv("KOPT_PTXAS"))
    return exec(p) ? std::string(p) : std::string();
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *d = std::getenv(var))
      if (exec(std::string(d) + "/bin/ptxas"))
        return std::string(d) + "/bin/ptxas";
  if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  for (const char *p : {"/usr/local/cuda/bin/ptxas", "/opt/cuda/bin/ptxas"})
    if (exec(p))
      return p;
  return "";
}

int runProgram(const std::vector<std::string> &argv, const std::string &logPath,
               int timeoutS, std::string &error) {
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  std::string message;
  bool failed = false;
  int rc = llvm::sys::ExecuteAndWait(argv[0], args, std::nullopt, redirects,
                                     unsigned(timeoutS), 0, &message, &failed);
  if (failed) {
    error = "cannot run " + argv[0] + ": " + message;
    return -1;
  }
  if (rc == -2) {
    error = message;
    if (message.find("timed out") != std::string::npos ||
        message.find("Timeout") != std::string::npos)
      return -2;
    return 128;
  }
  return rc;
}

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The first line of `text` that looks like an error (else its first line),
/// at most 300 bytes: the short summary agents and tables get.
std::string summarize(const std::string &text) {
  std::istringstream in(text);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;
    if (first.empty())
      first = line;
    if (line.find("error") != std::string::npos) {
      first = line;
      break;
    }
  }
  return schedule::abbreviate(first, 300);
}

class CapiBuilder : public search::Builder {
public:
  explicit CapiBuilder(BuildOptions o) : opts(std::move(o)) {}

  void build(const Task &task, std::vector<Candidate *> &batch) override {
    fs::path dir = fs::path(opts.workDir) / task.kernel;
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < batch.size();)
        buildOne(task, dir, *batch[i]);
    };
    int jobs = std::max(1, std::min<int>(opts.jobs, int(batch.size())));
    std::vector<std::thread> threads;
    for (int j = 1; j < jobs; ++j)
      threads.emplace_back(worker);
    worker();
    for (std::thread &t : threads)
      t.join();
  }

private:
  void buildOne(const Task &task, const fs::path &dir, Candidate &c) {
    uint64_t n = counter++;
    std::string stem = (dir / std::to_string(n)).string();
    std::string schedulePath = stem + ".schedule.json";
    {
      nlohmann::json entry;
      entry[task.kernel] = schedule::toJSON(c.schedule);
      std::ofstream out(schedulePath);
      out << entry.dump(2) << "\n";
      if (!out) {
        c.record.status = "compile_error";
        c.record.error = "cannot write " + schedulePath;
        return;
      }
    }
    kopt_compile_options o{};
    o.struct_size = sizeof(o);
    o.chip = opts.chip.c_str();
    o.opt_level = 0;
    o.schedule_file = schedulePath.c_str();
    o.pack_min_reuse = 0; // the default: pack as kopt-opt does
    o.source_name = opts.sourceName.c_str();
    std::string ptxName = std::to_string(n) + ".ptx";
    o.ptx_file_name = ptxName.c_str();
    kopt_compiled *compiled = nullptr;
    if (kopt_error *e = kopt_compile(opts.source.data(), opts.source.size(),
                                     &o, &compiled)) {
      c.record.status = "compile_error";
      c.record.error = summarize(kopt_error_message(e));
      kopt_error_free(e);
      return;
    }
    std::string ptxPath = stem + ".ptx";
    kopt_error *e = kopt_compiled_write(compiled, ptxPath.c_str());
    kopt_compiled_free(compiled);
    if (e) {
      c.record.status = "compile_error";
      c.record.error = summarize(kopt_error_message(e));
      kopt_error_free(e);
      return;
    }
    c.manifestPath = stem + ".json";
    if (opts.ptxas.empty())
      return;
    std::string log = stem + ".ptxas.log";
    std::string error;
    int rc = runProgram({opts.ptxas, "-arch=" + opts.chip, "-v", "-o",
                         "/dev/null", ptxPath},
                        log, opts.compileTimeoutS, error);
    std::string text = readFile(log);
    if (rc == -2) {
      c.record.status = "compile_error";
      c.record.error = "ptxas did not finish within " +
                       std::to_string(opts.compileTimeoutS) + " s";
      return;
    }
    if (rc != 0) {
      c.record.status = "compile_error";
      c.record.error = "ptxas: " + (rc < 0 ? error : summarize(text));
      return;
    }
    parseResources(task, text, c);
  }

  /// Reads the kernel's block of `ptxas -v` output:
  ///   ptxas info : Compiling entry function 'K' for 'sm_90a'
  ///   ptxas info : Function properties for K
  ///       0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
  ///   ptxas info : Used 168 registers, used 1 barriers, 1024 bytes smem, ...
  void parseResources(const Task &task, const std::string &text,
                      Candidate &c) {
    std::string marker = "entry function '" + task.kernel + "'";
    size_t at = text.find(marker);
    if (at == std::string::npos)
      return;
    size_t end = text.find("Compiling entry function", at + marker.size());
    std::string block = text.substr(at, end == std::string::npos
                                            ? std::string::npos
                                            : end - at);
    std::smatch m;
    static const std::regex regs("Used ([0-9]+) registers");
    static const std::regex spill("([0-9]+) bytes spill stores");
    static const std::regex smem("([0-9]+) bytes smem");
    if (std::regex_search(block, m, regs))
      c.record.registers = std::stoll(m[1]);
    if (std::regex_search(block, m, spill))
      c.record.spillBytes = std::stoll(m[1]);
    int64_t staticShared = 0;
    if (std::regex_search(block, m, smem))
      staticShared = std::stoll(m[1]);
    int64_t dynamicShared = schedule::sharedBytes(c.schedule, task.workload);
    c.record.sharedBytes = staticShared + dynamicShared;
    if (c.record.spillBytes > 0) {
      c.record.status = "rejected";
      c.record.error = "ptxas: spills " + std::to_string(c.record.spillBytes) +
                       " bytes (" + std::to_string(c.record.registers) +
                       " registers)";
    } else if (c.record.sharedBytes > task.target.maxSharedPerBlock) {
      c.record.status = "rejected";
      c.record.error = "shared memory " + std::to_string(c.record.sharedBytes) +
                       " bytes exceeds the " +
                       std::to_string(task.target.maxSharedPerBlock) +
                       " per block";
    }
  }

  BuildOptions opts;
  std::atomic<uint64_t> counter{0};
};

} // namespace

std::unique_ptr<search::Builder> makeBuilder(const BuildOptions &options) {
  return std::make_unique<CapiBuilder>(options);
}

} // namespace kopt::tune
