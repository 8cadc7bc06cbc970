//===- kopt-tune.cpp - Schedule search for the kernels of a module --------===//
//
//   kopt-tune MODULE.mlir [--strategy=evolutionary] [--budget=64] [--seed=0]
//             [--jobs=N] [--measurer=gpu|model|replay] [--replay=TABLE.jsonl]
//             [--db=FILE] [--resume] [--log=TRIALS.jsonl] [--json=OUT.json]
//   kopt-tune MODULE.mlir --strategy=external --agent-cmd "python3 agent.py"
//   kopt-tune --db=FILE --export=OUT.jsonl | --import=IN.jsonl
//   kopt-tune --report=PREFIX --report-tables=T.jsonl,... [--seeds=10]
//   kopt-tune --report=PREFIX --report-logs=TRIALS.jsonl,...
//
// Compiles the module once with the default heuristic, makes a task of each
// matmul kernel (include/kopt/Search/Task.h), and tunes the tasks within
// the budget (Tuner.h): the strategy proposes batches, the builder compiles
// them --jobs at a time (kopt_compile, then ptxas -v: spilling candidates and
// shared-memory overflows are dropped before any GPU time), the measurer
// times them one at a time, every trial goes to the tuning database and the
// trial log. Prints a progress bar on a terminal and a final table per
// kernel: trials, the heuristic's time, the best time and schedule.
// docs/tuning.md is the user's guide.
//
// Exit code: 0 when tuning ran (whatever the trials' outcomes), 1 when no
// trial of some kernel was usable, 2 on bad arguments, an unreadable or
// uncompilable module, a module without matmul kernels, or a failure of the
// measurer or the database, 3 when the external agent was given up on
// (ExternalAgent.h; the trials measured before are recorded).
//
//===----------------------------------------------------------------------===//

#include "Tune.h"

#include "kopt-c/kopt.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Search/ExternalAgent.h"
#include "kopt/Search/Report.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

#ifndef KOPT_VERSION
#error "KOPT_VERSION is set by tools/kopt-tune/CMakeLists.txt"
#endif

using namespace kopt;
using namespace kopt::search;
namespace cl = llvm::cl;
namespace fs = std::filesystem;
using nlohmann::json;

static cl::OptionCategory category("kopt-tune options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<module.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    strategyOpt("strategy",
                cl::desc("heuristic, grid, random, evolutionary (default) or "
                         "external (--agent-cmd)"),
                cl::init("evolutionary"), cl::cat(category));
static cl::opt<std::string> agentCmd(
    "agent-cmd",
    cl::desc("--strategy=external: the agent's command, run by /bin/sh -c "
             "(docs/agent-protocol.md)"),
    cl::value_desc("command"), cl::cat(category));
static cl::opt<int> agentTimeout(
    "agent-timeout",
    cl::desc("seconds the external agent may take for one reply before it is "
             "stopped and restarted (default 120)"),
    cl::init(120), cl::cat(category));
static cl::opt<int> agentRestarts(
    "agent-restarts",
    cl::desc("restarts of an external agent that crashed or hung (default 2)"),
    cl::init(2), cl::cat(category));
static cl::opt<std::string> agentTranscript(
    "agent-transcript",
    cl::desc("append every line exchanged with the external agent"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t> budgetOpt("budget",
                                  cl::desc("trials in all (default 64)"),
                                  cl::init(64), cl::cat(category));
static cl::opt<int64_t>
    budgetPerKernel("budget-per-kernel",
                    cl::desc("at most this many trials per kernel (0: no "
                             "limit but --budget)"),
                    cl::init(0), cl::cat(category));
static cl::opt<uint64_t> seedOpt("seed", cl::desc("search seed (default 0)"),
                                 cl::init(0), cl::cat(category));
static cl::opt<int>
    jobsOpt("jobs", cl::desc("compiles at once (default: the host's cores)"),
            cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    batchOpt("batch-size",
             cl::desc("candidates per batch (default 16: built together, "
                      "then measured one at a time)"),
             cl::init(16), cl::cat(category));
static cl::opt<std::string> measurerOpt(
    "measurer",
    cl::desc("gpu (default), model (an analytical estimate) or replay"),
    cl::init("gpu"), cl::cat(category));
static cl::opt<std::string>
    replayOpt("replay", cl::desc("the recorded table of --measurer=replay"),
              cl::value_desc("table.jsonl"), cl::cat(category));
static cl::opt<std::string> dbOpt("db",
                                  cl::desc("the tuning database (SQLite)"),
                                  cl::value_desc("file"), cl::cat(category));
static cl::opt<bool>
    resumeOpt("resume",
              cl::desc("continue the last session of this module, strategy, "
                       "seed and measurer in --db without repeating trials"),
              cl::cat(category));
static cl::opt<std::string>
    sessionOpt("session",
               cl::desc("the session's name (default: module-strategy-seed-"
                        "measurer, plus the start time unless --resume)"),
               cl::cat(category));
static cl::list<std::string>
    kernelOpt("kernel", cl::desc("tune only this kernel"), cl::cat(category));
static cl::opt<std::string> chipOpt("chip",
                                    cl::desc("target GPU (default: sm_90a)"),
                                    cl::init("sm_90a"), cl::cat(category));
static cl::opt<int> compileTimeout(
    "compile-timeout",
    cl::desc("seconds before ptxas is killed (ptxas can hang; default 120)"),
    cl::init(120), cl::cat(category));
static cl::opt<int64_t>
    runTimeout("run-timeout",
               cl::desc("ms before a kernel's launch is given up (default "
                        "10000)"),
               cl::init(10000), cl::cat(category));
static cl::opt<int64_t> runsOpt("runs",
                                cl::desc("timed runs per candidate, at most "
                                         "(default 50)"),
                                cl::init(50), cl::cat(category));
static cl::opt<int64_t>
    timeBudget("time-budget",
               cl::desc("ms of timed runs per candidate (default 400)"),
               cl::init(400), cl::cat(category));
static cl::opt<int> timeLimit(
    "time-limit",
    cl::desc("seconds after which no new batch starts (the one in flight "
             "finishes and is recorded; default 0: no limit)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string>
    logOpt("log", cl::desc("append every trial as a JSON line"),
           cl::value_desc("trials.jsonl"), cl::cat(category));
static cl::opt<std::string> jsonOpt("json",
                                    cl::desc("write the final table as JSON"),
                                    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    workDirOpt("work-dir",
               cl::desc("where candidates are compiled (default: a new "
                        "temporary folder, removed at the end)"),
               cl::cat(category));
static cl::opt<bool> keepWork("keep-work",
                              cl::desc("keep the candidates' files"),
                              cl::cat(category));
static cl::opt<std::string>
    koptRunOpt("kopt-run",
               cl::desc("kopt-run for --measurer=gpu (default: beside "
                        "kopt-tune, then PATH)"),
               cl::cat(category));
static cl::opt<std::string> ptxasOpt(
    "ptxas",
    cl::desc("ptxas for the resources check (default: found as the build "
             "does; 'none': no check)"),
    cl::cat(category));
static cl::opt<bool> noProgress("no-progress",
                                cl::desc("no progress bar on a terminal"),
                                cl::cat(category));
static cl::opt<std::string>
    exportOpt("export",
              cl::desc("write every trial of --db as JSON lines and exit"),
              cl::value_desc("out.jsonl"), cl::cat(category));
static cl::opt<std::string>
    importOpt("import",
              cl::desc("add the JSON lines of a file to --db and exit"),
              cl::value_desc("in.jsonl"), cl::cat(category));

static cl::opt<std::string> reportOpt(
    "report",
    cl::desc("compare strategies: write PREFIX.csv, PREFIX.json and "
             "PREFIX.png (best so far against trials) from --report-tables "
             "or --report-logs, and exit"),
    cl::value_desc("PREFIX"), cl::cat(category));
static cl::list<std::string> reportTables(
    "report-tables",
    cl::desc("--report: replay tables (JSON lines) every strategy of "
             "--report-strategies runs against, --seeds times"),
    cl::CommaSeparated, cl::value_desc("table.jsonl,..."), cl::cat(category));
static cl::list<std::string> reportLogs(
    "report-logs",
    cl::desc("--report: trial logs (--log) plotted as they were recorded"),
    cl::CommaSeparated, cl::value_desc("trials.jsonl,..."), cl::cat(category));
static cl::list<std::string> reportStrategies(
    "report-strategies",
    cl::desc("--report-tables: the strategies compared (default random, grid, "
             "evolutionary; external runs --agent-cmd)"),
    cl::CommaSeparated, cl::cat(category));
static cl::opt<int>
    seedsOpt("seeds",
             cl::desc("--report-tables: runs per strategy and problem "
                      "(default 10)"),
             cl::init(10), cl::cat(category));

namespace {

constexpr int kExitUnusable = 1;
constexpr int kExitError = 2;
/// The external agent was given up on (crashed or hung past its restarts,
/// or spoke another protocol); the trials measured are recorded.
constexpr int kExitAgent = 3;

int fail(const std::string &message) {
  std::fprintf(stderr, "kopt-tune: error: %s\n", message.c_str());
  return kExitError;
}

std::string utcStamp(const char *format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

/// "wgmma 128x256x64 w64x256 s4 tma ws persistent sw8 v8 tma_store".
std::string shortSchedule(const schedule::MatmulSchedule &s) {
  std::ostringstream o;
  o << schedule::toString(s.instruction) << " " << s.blockM << "x" << s.blockN
    << "x" << s.blockK << " w" << s.warpM << "x" << s.warpN << " s" << s.stages
    << " " << schedule::toString(s.copy);
  if (s.splitK > 1)
    o << " splitk" << s.splitK;
  if (s.swizzle > 1)
    o << " sw" << s.swizzle;
  if (s.vectorWidth > 1)
    o << " v" << s.vectorWidth;
  if (s.persistent)
    o << " persistent";
  if (s.warpSpecialize)
    o << " ws";
  if (s.tmaStore)
    o << " tma_store";
  return o.str();
}

int dbOnly(Database &db) {
  if (!exportOpt.empty()) {
    std::ofstream out(exportOpt);
    if (!out)
      return fail("cannot write '" + exportOpt + "'");
    Expected<int64_t> n = db.exportJSONL(out);
    out.close();
    if (!n.ok())
      return fail(n.error());
    if (!out)
      return fail("cannot write '" + exportOpt + "'");
    std::fprintf(stderr, "kopt-tune: exported %lld trials to %s\n",
                 (long long)*n, exportOpt.c_str());
    return 0;
  }
  std::ifstream in(importOpt);
  if (!in)
    return fail("cannot read '" + importOpt + "'");
  Expected<int64_t> n = db.importJSONL(in, importOpt);
  if (!n.ok())
    return fail(n.error());
  std::fprintf(stderr, "kopt-tune: imported %lld trials into %s\n",
               (long long)*n, db.path().c_str());
  return 0;
}

/// The progress bar (a terminal) or one line per trial (a log).
class Progress {
public:
  Progress(int64_t total, bool bar) : total(total), bar(bar) {
    start = std::chrono::steady_clock::now();
  }
  void trial(const Task &task, const Trial &t, int64_t done,
             const TrialRecord *best) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double eta = done > resumed
                     ? elapsed / double(done - resumed) * double(total - done)
                     : 0;
    char line[512];
    if (bar) {
      int width = 30;
      int filled = total > 0 ? int(width * done / total) : width;
      std::string b(size_t(filled), '#');
      b.resize(size_t(width), '.');
      std::snprintf(line, sizeof(line),
                    "\r[%s] %lld/%lld  %s best %s  ETA %d:%02d   ", b.c_str(),
                    (long long)done, (long long)total, task.kernel.c_str(),
                    best ? (fmt(best->medianMs) + " ms").c_str() : "-",
                    int(eta) / 60, int(eta) % 60);
      std::fputs(line, stderr);
      if (done >= total)
        std::fputs("\n", stderr);
    } else {
      std::snprintf(
          line, sizeof(line), "kopt-tune: [%lld/%lld] %s %s%s%s (best %s)\n",
          (long long)done, (long long)total, task.kernel.c_str(),
          t.record.status.c_str(),
          t.record.usable() ? (" " + fmt(t.record.medianMs) + " ms").c_str()
                            : "",
          t.record.error.empty()
              ? ""
              : (": " + schedule::abbreviate(t.record.error, 120)).c_str(),
          best ? (fmt(best->medianMs) + " ms").c_str() : "none");
      std::fputs(line, stderr);
    }
    std::fflush(stderr);
  }
  void finish() {
    if (bar)
      std::fputs("\n", stderr);
  }
  static std::string fmt(double ms) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.4f", ms);
    return b;
  }
  int64_t resumed = 0;

private:
  int64_t total;
  bool bar;
  std::chrono::steady_clock::time_point start;
};

std::string findKoptRun(const char *argv0) {
  if (!koptRunOpt.empty())
    return koptRunOpt;
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&findKoptRun));
  if (!self.empty()) {
    fs::path sibling = fs::path(self).parent_path() / "kopt-run";
    if (::access(sibling.c_str(), X_OK) == 0)
      return sibling.string();
  }
  if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName("kopt-run"))
    return *p;
  return "";
}

/// A usage error in the options, or nullopt (after the command line parsed).
std::optional<std::string> checkOptions() {
  bool externalReport =
      std::find(reportStrategies.begin(), reportStrategies.end(), "external") !=
      reportStrategies.end();
  if (!reportOpt.empty()) {
    if (!inputFile.empty())
      return std::string("--report takes no module (it reads --report-tables "
                         "or --report-logs)");
    if (reportTables.empty() == reportLogs.empty())
      return std::string("--report needs --report-tables or --report-logs "
                         "(one of them)");
    if (!reportLogs.empty() && !reportStrategies.empty())
      return std::string("--report-strategies is for --report-tables (a log "
                         "holds its own strategies)");
    if (seedsOpt < 1 || seedsOpt > 1000)
      return "--seeds must be in [1, 1000], got " + std::to_string(seedsOpt);
    if (budgetOpt < 1 || batchOpt < 1 || batchOpt > 1024)
      return std::string("--budget must be at least 1 and --batch-size in "
                         "[1, 1024]");
    if (externalReport && agentCmd.empty())
      return std::string("--report-strategies=external needs --agent-cmd");
    for (const std::string &s : reportStrategies)
      if (s != "external")
        if (Expected<std::unique_ptr<Agent>> a = makeAgent(s, 0); !a.ok())
          return a.error();
    return std::nullopt;
  }
  if (!reportTables.empty() || !reportLogs.empty() || !reportStrategies.empty())
    return std::string("--report-tables, --report-logs and "
                       "--report-strategies are for --report");
  if (!exportOpt.empty() || !importOpt.empty()) {
    if (dbOpt.empty())
      return std::string("--export and --import need --db");
    if (!exportOpt.empty() && !importOpt.empty())
      return std::string("give --export or --import, not both");
    if (!inputFile.empty())
      return std::string("--export and --import take no module");
    return std::nullopt;
  }
  if (inputFile.empty())
    return std::string("no module given (kopt-tune MODULE.mlir; --help lists "
                       "the options)");
  if (budgetOpt < 1 || budgetPerKernel < 0)
    return "--budget must be at least 1 and --budget-per-kernel not "
           "negative, got " +
           std::to_string(budgetOpt) + " and " +
           std::to_string(budgetPerKernel);
  if (jobsOpt < 0 || jobsOpt > 4096)
    return "--jobs must be in [0, 4096] (0: the host's cores), got " +
           std::to_string(jobsOpt);
  if (batchOpt < 1 || batchOpt > 1024)
    return "--batch-size must be in [1, 1024], got " + std::to_string(batchOpt);
  if (runsOpt < 1 || timeBudget < 0 || runTimeout < 0 || compileTimeout < 0 ||
      timeLimit < 0)
    return std::string("--runs must be at least 1; --time-budget, "
                       "--run-timeout, --compile-timeout and --time-limit "
                       "must not be negative");
  if (resumeOpt && dbOpt.empty())
    return std::string("--resume needs --db (the trials to resume are there)");
  if (strategyOpt == "external") {
    if (agentCmd.empty())
      return std::string("--strategy=external needs --agent-cmd (the agent's "
                         "command; docs/agent-protocol.md)");
    if (agentTimeout < 1 || agentRestarts < 0)
      return std::string("--agent-timeout must be at least 1 s and "
                         "--agent-restarts not negative");
  } else if (!agentCmd.empty() || !agentTranscript.empty()) {
    // (--report with --report-strategies=external returned above.)
    return std::string("--agent-cmd and --agent-transcript are for "
                       "--strategy=external");
  } else if (Expected<std::unique_ptr<Agent>> a = makeAgent(strategyOpt, 0);
             !a.ok()) {
    return a.error();
  }
  if (measurerOpt != "gpu" && measurerOpt != "model" && measurerOpt != "replay")
    return "unknown measurer '" + measurerOpt + "' (known: gpu, model, replay)";
  if (measurerOpt == "replay" && replayOpt.empty())
    return std::string("--measurer=replay needs --replay=TABLE.jsonl");
  if (!replayOpt.empty() && measurerOpt != "replay")
    return std::string("--replay is for --measurer=replay");
  // Output files are checked before any trial runs.
  for (const std::string *path :
       {&logOpt.getValue(), &jsonOpt.getValue(), &agentTranscript.getValue()}) {
    if (path->empty())
      continue;
    std::error_code ec;
    if (fs::is_directory(*path, ec))
      return "cannot write '" + *path + "': it is a folder";
    std::ofstream probe(*path, std::ios::app);
    if (!probe)
      return "cannot write '" + *path + "': " + std::strerror(errno);
  }
  return std::nullopt;
}

/// The folder candidates are compiled in: --work-dir, or a new temporary one
/// (`temporary`), removed by the caller.
Expected<std::string> makeWorkDir(bool &temporary) {
  temporary = workDirOpt.empty();
  if (temporary) {
    llvm::SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("kopt-tune", dir))
      return Status::error("cannot create a work folder: " + ec.message());
    return std::string(dir);
  }
  std::error_code ec;
  fs::create_directories(std::string(workDirOpt), ec);
  if (ec)
    return Status::error("cannot create '" + workDirOpt + "': " + ec.message());
  return std::string(workDirOpt);
}

/// The measurer of --measurer, and for gpu the builder.
Expected<std::unique_ptr<Measurer>>
makeMeasurer(const char *argv0, const std::string &source,
             const std::string &workDir, std::unique_ptr<Builder> &builder) {
  if (measurerOpt == "model")
    return makeModelMeasurer();
  if (measurerOpt == "replay")
    return makeReplayMeasurer(replayOpt);
  std::string koptRun = findKoptRun(argv0);
  if (koptRun.empty())
    return Status::error("--measurer=gpu needs kopt-run: not beside kopt-tune "
                         "nor on PATH (give --kopt-run=PATH, or "
                         "--measurer=model for an estimate without a GPU)");
  tune::GpuOptions g;
  g.koptRun = koptRun;
  g.seed = seedOpt + 1;
  g.runs = runsOpt;
  g.runTimeoutMs = runTimeout;
  g.timeBudgetMs = timeBudget;
  g.workDir = workDir;
  tune::BuildOptions b;
  b.source = source;
  b.sourceName = inputFile;
  b.chip = chipOpt;
  b.workDir = workDir;
  b.jobs =
      jobsOpt > 0 ? jobsOpt : std::max(1u, std::thread::hardware_concurrency());
  b.ptxas = ptxasOpt == "none"  ? ""
            : !ptxasOpt.empty() ? std::string(ptxasOpt)
                                : tune::findPtxas();
  if (b.ptxas.empty() && ptxasOpt != "none")
    std::fprintf(stderr, "kopt-tune: warning: ptxas not found: no registers "
                         "or spills are checked before timing (set "
                         "KOPT_PTXAS or --ptxas)\n");
  b.compileTimeoutS = compileTimeout;
  builder = tune::makeBuilder(b);
  return tune::makeGpuMeasurer(g);
}

/// The module's matmul kernels (all, or those of --kernel) as tasks, from a
/// compile with the heuristic.
Expected<std::vector<Task>> loadTasks(const std::string &source) {
  kopt_compile_options copts{};
  copts.struct_size = sizeof(copts);
  copts.chip = chipOpt.c_str();
  copts.opt_level = 0;
  copts.pack_min_reuse = 0; // the default: pack as kopt-opt does
  copts.source_name = inputFile.c_str();
  kopt_compiled *compiled = nullptr;
  if (kopt_error *e =
          kopt_compile(source.data(), source.size(), &copts, &compiled)) {
    std::string message = kopt_error_message(e);
    kopt_error_free(e);
    return Status::error("cannot compile '" + inputFile + "':\n" + message);
  }
  std::string manifestText = kopt_compiled_manifest(compiled, nullptr);
  kopt_compiled_free(compiled);
  Expected<manifest::Manifest> m =
      manifest::parseManifest(manifestText, inputFile);
  if (!m.ok())
    return m.status();
  Expected<std::vector<Task>> all = tasksFromManifest(*m);
  if (!all.ok())
    return all.status();
  std::vector<Task> tasks;
  for (Task &t : *all)
    if (kernelOpt.empty() || std::find(kernelOpt.begin(), kernelOpt.end(),
                                       t.kernel) != kernelOpt.end())
      tasks.push_back(t);
  for (const std::string &k : kernelOpt)
    if (std::none_of(tasks.begin(), tasks.end(),
                     [&](const Task &t) { return t.kernel == k; })) {
      std::string names;
      for (const Task &t : *all)
        names += (names.empty() ? "" : ", ") + t.kernel;
      return Status::error("--kernel " + k +
                           ": no matmul kernel of that name (the module's: " +
                           (names.empty() ? "none" : names) + ")");
    }
  if (tasks.empty())
    return Status::error(
        "nothing to tune: '" + inputFile +
        "' has no matmul kernel (kopt-tune searches matmul schedules; row "
        "and elementwise kernels have no space yet)");
  return tasks;
}

/// --session, or module-strategy-sSEED-measurer plus the start time; with
/// --resume the latest such session in `db`.
Expected<std::string> sessionName(Database *db) {
  if (!sessionOpt.empty())
    return std::string(sessionOpt);
  std::string base = fs::path(std::string(inputFile)).stem().string() + "-" +
                     strategyOpt + "-s" + std::to_string(seedOpt) + "-" +
                     measurerOpt;
  std::string session;
  if (resumeOpt) {
    Expected<std::vector<TrialRecord>> old = db->trials();
    if (!old.ok())
      return old.status();
    for (const TrialRecord &r : *old)
      if (r.session.rfind(base + "-", 0) == 0 && r.session > session)
        session = r.session;
  }
  if (session.empty())
    session = base + "-" + utcStamp("%Y%m%dT%H%M%SZ");
  return session;
}

/// Prints the final table (and writes --json); the exit code.
int report(const Tuner &tuner, const Status &status, const std::string &session,
           const ExternalAgentHost *agent) {
  json table = json::array();
  bool allUsable = true;
  int64_t unusable = 0, untried = 0;
  std::printf("%-28s %-8s %12s %12s %8s  %s\n", "kernel", "trials",
              "heuristic ms", "best ms", "speedup", "best schedule");
  for (const TaskResult &r : tuner.results()) {
    json row;
    row["kernel"] = r.task->kernel;
    row["workload"] = r.task->workloadKey;
    row["ops"] = r.task->ops;
    row["trials"] = r.trials;
    row["statuses"] = r.statuses;
    row["measurer"] = std::string(measurerOpt);
    double h = r.heuristic && r.heuristic->usable() ? r.heuristic->medianMs
                                                    : TrialRecord::NaN;
    double b = r.best ? r.best->medianMs : TrialRecord::NaN;
    row["heuristic_ms"] = std::isnan(h) ? json(nullptr) : json(h);
    row["best_ms"] = std::isnan(b) ? json(nullptr) : json(b);
    row["speedup_over_heuristic"] =
        std::isnan(h) || std::isnan(b) ? json(nullptr) : json(h / b);
    std::string shortBest = "-";
    if (r.best) {
      row["best_schedule"] = json::parse(r.best->schedule);
      int64_t p = r.task->indexOf(r.best->schedule);
      if (p >= 0)
        shortBest = shortSchedule(r.task->space[p]);
    } else {
      allUsable = false;
      ++unusable;
      untried += r.trials == 0;
    }
    table.push_back(row);
    char speed[16] = "-";
    if (!std::isnan(h) && !std::isnan(b))
      std::snprintf(speed, sizeof(speed), "%.3fx", h / b);
    std::printf("%-28s %-8lld %12s %12s %8s  %s\n", r.task->kernel.c_str(),
                (long long)r.trials,
                std::isnan(h) ? "-" : Progress::fmt(h).c_str(),
                std::isnan(b) ? "-" : Progress::fmt(b).c_str(), speed,
                shortBest.c_str());
  }
  if (measurerOpt == "model")
    std::printf("(times are the model's estimates, not measurements)\n");
  std::fflush(stdout);
  if (!jsonOpt.empty()) {
    json out = {{"tool", "kopt-tune"},
                {"version", KOPT_VERSION},
                {"module", std::string(inputFile)},
                {"strategy", std::string(strategyOpt)},
                {"measurer", std::string(measurerOpt)},
                {"seed", uint64_t(seedOpt)},
                {"budget", int64_t(budgetOpt)},
                {"session", session},
                {"kernels", table}};
    if (!status.ok())
      out["error"] = status.message();
    if (agent) {
      out["agent"] = agent->events().toJSON();
      out["agent"]["command"] = std::string(agentCmd);
    }
    std::ofstream o(jsonOpt);
    o << out.dump(2) << "\n";
    if (!o)
      return fail("cannot write '" + jsonOpt + "'");
  }
  if (!status.ok())
    return fail(status.message());
  if (agent) {
    const AgentEvents &e = agent->events();
    std::fprintf(
        stderr,
        "kopt-tune: agent %s: %lld replies; skipped %lld malformed and %lld "
        "over-long lines; refused %lld invalid, %lld duplicate, %lld "
        "out-of-space and %lld excess schedules; %lld timeouts, %lld crashes, "
        "%lld restarts\n",
        e.name.empty() ? "(unnamed)" : ("'" + e.name + "'").c_str(),
        (long long)e.replies, (long long)e.malformedLines,
        (long long)e.tooLongLines, (long long)e.invalidSchedules,
        (long long)e.duplicates, (long long)e.outsideSpace, (long long)e.excess,
        (long long)e.timeouts, (long long)e.crashes, (long long)e.restarts);
    if (e.gaveUp) {
      std::fprintf(stderr,
                   "kopt-tune: error: the agent was given up on (%s); the "
                   "trials measured are recorded%s\n",
                   e.lastProblem.c_str(),
                   dbOpt.empty() ? "" : " (--resume continues the session)");
      return kExitAgent;
    }
  }
  if (!allUsable) {
    std::fprintf(stderr, "kopt-tune: %lld of %zu kernels have no usable trial",
                 (long long)unusable, tuner.results().size());
    if (untried > 0)
      std::fprintf(stderr,
                   " (%lld got no trial: --budget %lld is below what the "
                   "module's kernels need)",
                   (long long)untried, (long long)budgetOpt);
    std::fprintf(stderr, "\n");
  }
  return allUsable ? 0 : kExitUnusable;
}

/// The plotting script of --report (python/kopt/tune_report.py): beside the
/// tools in a bundle or an install (../python), else in the source tree;
/// KOPT_TUNE_REPORT_PLOT overrides.
std::string findPlotScript(const char *argv0) {
  if (const char *env = std::getenv("KOPT_TUNE_REPORT_PLOT"))
    return env;
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&findPlotScript));
  std::vector<fs::path> candidates;
  if (!self.empty())
    candidates.push_back(fs::path(self).parent_path().parent_path() / "python" /
                         "kopt" / "tune_report.py");
  candidates.push_back(fs::path(KOPT_SOURCE_DIR) / "python" / "kopt" /
                       "tune_report.py");
  for (const fs::path &p : candidates)
    if (::access(p.c_str(), R_OK) == 0)
      return p.string();
  return "";
}

/// The external agent's options from --agent-cmd, --agent-timeout,
/// --agent-restarts and --agent-transcript (a run adds budget, seed, ...).
ExternalAgentOptions agentOptions() {
  ExternalAgentOptions e;
  e.command = agentCmd;
  e.replyTimeoutMs = agentTimeout * 1000;
  e.maxRestarts = agentRestarts;
  e.koptVersion = KOPT_VERSION;
  e.transcriptPath = agentTranscript;
  return e;
}

/// --report: the curves, CSV, JSON summary, PNG; the exit code.
int reportMain(const char *argv0) {
  Expected<std::vector<Curve>> curves = Status::success();
  if (!reportLogs.empty()) {
    curves = logCurves(
        std::vector<std::string>(reportLogs.begin(), reportLogs.end()),
        budgetOpt);
  } else {
    ReportOptions o;
    if (!reportStrategies.empty())
      o.strategies.assign(reportStrategies.begin(), reportStrategies.end());
    o.seeds = seedsOpt;
    o.budget = budgetOpt;
    o.batchSize = batchOpt;
    if (!agentCmd.empty())
      o.external = agentOptions();
    curves = replayCurves(
        std::vector<std::string>(reportTables.begin(), reportTables.end()), o);
  }
  if (!curves.ok())
    return fail(curves.error());
  if (curves->empty())
    return fail("nothing to report: no problem of the inputs has a usable "
                "trial");
  std::string csvPath = reportOpt + ".csv", jsonPath = reportOpt + ".json",
              pngPath = reportOpt + ".png";
  {
    std::ofstream csv(csvPath);
    writeCSV(*curves, csv);
    if (!csv)
      return fail("cannot write '" + csvPath + "'");
  }
  json summary = summaryJSON(*curves);
  summary = {{"tool", "kopt-tune --report"},
             {"version", KOPT_VERSION},
             {"source", reportLogs.empty() ? "replay" : "logs"},
             {"budget", int64_t(budgetOpt)},
             {"seeds", reportLogs.empty() ? json(int(seedsOpt)) : json()},
             {"strategies", summary}};
  {
    std::ofstream o(jsonPath);
    o << summary.dump(2) << "\n";
    if (!o)
      return fail("cannot write '" + jsonPath + "'");
  }
  std::printf("%-14s %8s %10s %10s %10s %14s\n", "strategy", "problems",
              "ratio@16", "ratio@32", "ratio@64", "within 3%@64");
  for (const auto &[name, s] : summary["strategies"].items()) {
    auto r = [&](const char *k) {
      return s.contains(k) && s[k].is_number()
                 ? Progress::fmt(s[k].get<double>())
                 : std::string("-");
    };
    std::string within =
        s.contains("problems_within_3pct_at_64")
            ? std::to_string(s["problems_within_3pct_at_64"].get<int64_t>()) +
                  "/" + std::to_string(s["problems"].get<int64_t>())
            : "-";
    std::printf("%-14s %8lld %10s %10s %10s %14s\n", name.c_str(),
                (long long)s["problems"].get<int64_t>(),
                r("geomean_ratio_at_16").c_str(),
                r("geomean_ratio_at_32").c_str(),
                r("geomean_ratio_at_64").c_str(), within.c_str());
  }
  std::printf("(ratio: the best time after that many trials over the best "
              "%s, geometric mean over problems of the mean over runs)\n",
              reportLogs.empty() ? "point of the table" : "time of the logs");
  std::fflush(stdout);
  std::string script = findPlotScript(argv0);
  llvm::ErrorOr<std::string> python = llvm::sys::findProgramByName("python3");
  std::string why;
  if (script.empty())
    why = "python/kopt/tune_report.py not found (set KOPT_TUNE_REPORT_PLOT)";
  else if (!python)
    why = "python3 not found";
  else {
    llvm::SmallVector<llvm::StringRef, 4> args = {*python, script, csvPath,
                                                  pngPath};
    std::string message;
    int rc = llvm::sys::ExecuteAndWait(*python, args, std::nullopt, {}, 120, 0,
                                       &message);
    if (rc != 0)
      why = "python3 " + script + " failed" +
            (message.empty() ? "" : ": " + message) +
            " (its error is above; it needs matplotlib, which "
            "scripts/setup.sh installs)";
  }
  if (!why.empty()) {
    std::fprintf(
        stderr, "kopt-tune: warning: no %s: %s; %s and %s are written\n",
        pngPath.c_str(), why.c_str(), csvPath.c_str(), jsonPath.c_str());
    return 0;
  }
  std::fprintf(stderr, "kopt-tune: wrote %s, %s and %s\n", csvPath.c_str(),
               jsonPath.c_str(), pngPath.c_str());
  return 0;
}

/// Removes a folder when it goes out of scope (`remove`).
struct Cleanup {
  std::string dir;
  bool remove;
  ~Cleanup() {
    if (remove) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
};

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kopt-tune (kopt) version " << KOPT_VERSION << "\n";
  });
  // A command line that does not parse is a usage error (exit 2).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "kopt-tune: schedule search for the matmul kernels of a module\n",
          &llvm::errs()))
    return kExitError;
  if (std::optional<std::string> error = checkOptions())
    return fail(*error);

  if (!reportOpt.empty())
    return reportMain(argv[0]);

  // --export / --import need nothing but the database.
  // An import that fails leaves no new database behind.
  if (!exportOpt.empty() || !importOpt.empty()) {
    if (!importOpt.empty() && !std::ifstream(importOpt))
      return fail("cannot read '" + importOpt + "'");
    bool existed = llvm::sys::fs::exists(dbOpt);
    int rc;
    {
      Expected<std::unique_ptr<Database>> d =
          Database::open(dbOpt, /*readOnly=*/!exportOpt.empty());
      if (!d.ok())
        return fail(d.error());
      rc = dbOnly(**d);
    }
    if (rc != 0 && !importOpt.empty() && !existed)
      for (const char *suffix : {"", "-wal", "-shm"})
        llvm::sys::fs::remove(dbOpt + suffix);
    return rc;
  }

  std::ifstream in(inputFile);
  if (!in)
    return fail("cannot read '" + inputFile + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string source = ss.str();
  Expected<std::vector<Task>> tasks = loadTasks(source);
  if (!tasks.ok())
    return fail(tasks.error());

  bool temporary = false;
  Expected<std::string> workDir = makeWorkDir(temporary);
  if (!workDir.ok())
    return fail(workDir.error());
  Cleanup cleanup{*workDir, temporary && !keepWork};
  std::unique_ptr<Builder> builder;
  Expected<std::unique_ptr<Measurer>> measurer =
      makeMeasurer(argv[0], source, *workDir, builder);
  if (!measurer.ok())
    return fail(measurer.error());
  for (Task &t : *tasks) {
    std::optional<std::vector<std::string>> only = (*measurer)->points(t);
    fillSpace(t, only ? &*only : nullptr);
    if (t.space.empty())
      std::fprintf(
          stderr, "kopt-tune: warning: %s (%s): no point of its space %s\n",
          t.kernel.c_str(), t.workloadKey.c_str(),
          measurerOpt == "replay" ? "is in the replay table" : "is valid");
  }

  std::unique_ptr<Database> db;
  if (!dbOpt.empty()) {
    Expected<std::unique_ptr<Database>> d = Database::open(dbOpt);
    if (!d.ok())
      return fail(d.error());
    db = std::move(*d);
  }
  Expected<std::string> session = sessionName(db.get());
  if (!session.ok())
    return fail(session.error());

  TunerOptions topts;
  topts.strategy = strategyOpt;
  topts.budget = budgetOpt;
  topts.budgetPerTask = budgetPerKernel;
  topts.seed = seedOpt;
  topts.batchSize = batchOpt;
  topts.session = *session;
  topts.koptVersion = KOPT_VERSION;
  if (timeLimit > 0)
    topts.deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(timeLimit);
  std::unique_ptr<ExternalAgentHost> agentHost;
  if (strategyOpt == "external") {
    ExternalAgentOptions a = agentOptions();
    a.budget = budgetOpt;
    a.batchSize = batchOpt;
    a.seed = seedOpt;
    a.measurer = measurerOpt;
    // A warning starts a line of its own below the progress bar.
    bool bar = !noProgress && ::isatty(2);
    agentHost = std::make_unique<ExternalAgentHost>(
        *tasks, a, [bar](const std::string &m) {
          std::fprintf(stderr, "%skopt-tune: warning: %s\n", bar ? "\n" : "",
                       m.c_str());
        });
    topts.agentFor = [&](size_t i, uint64_t) { return agentHost->agentFor(i); };
  }
  Tuner tuner(*tasks, **measurer, builder.get(), db.get(), topts);
  Expected<int64_t> resumed = tuner.prepare();
  if (!resumed.ok())
    return fail(resumed.error());
  std::fprintf(
      stderr,
      "kopt-tune: %zu kernel%s, strategy %s, measurer %s%s, budget "
      "%lld, session %s%s\n",
      tasks->size(), tasks->size() == 1 ? "" : "s", strategyOpt.c_str(),
      measurerOpt.c_str(),
      measurerOpt == "model" ? " (estimates, not measurements)" : "",
      (long long)budgetOpt, session->c_str(),
      *resumed ? (", resuming " + std::to_string(*resumed) + " trials").c_str()
               : "");

  std::ofstream log;
  if (!logOpt.empty()) {
    log.open(logOpt, std::ios::app);
    if (!log)
      return fail("cannot write '" + logOpt + "'");
  }
  Progress progress(budgetOpt, !noProgress && ::isatty(2));
  progress.resumed = *resumed;
  Status status = tuner.run([&](const Task &task, const Trial &t, int64_t done,
                                const TrialRecord *best) {
    if (log.is_open()) {
      json j = toJSON(t.record);
      j["kernel"] = task.kernel;
      log << j.dump() << "\n";
      log.flush();
    }
    progress.trial(task, t, done, best);
  });
  progress.finish();
  if (agentHost)
    agentHost->finish();
  return report(tuner, status, *session, agentHost.get());
}
