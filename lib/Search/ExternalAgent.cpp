//===- ExternalAgent.cpp - Any program as the search agent ----------------===//
//
// See include/kopt/Search/ExternalAgent.h and docs/agent-protocol.md.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/ExternalAgent.h"
#include "AgentProcess.h"
#include "kopt/Search/Measurer.h"

#include <cmath>
#include <fstream>
#include <unordered_set>

namespace kopt::search {

using json = nlohmann::json;
namespace sched = kopt::schedule;

namespace {

json numberOrNull(double v) { return std::isfinite(v) ? json(v) : json(); }
json countOrNull(int64_t v) { return v >= 0 ? json(v) : json(); }

/// The dump of `j`, or an abbreviation of it when long.
json echo(const json &j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= 2000)
    return j;
  return sched::abbreviate(text, 200);
}

} // namespace

json AgentEvents::toJSON() const {
  return {{"name", name},
          {"replies", replies},
          {"malformed_lines", malformedLines},
          {"too_long_lines", tooLongLines},
          {"invalid_schedules", invalidSchedules},
          {"duplicates", duplicates},
          {"outside_space", outsideSpace},
          {"excess", excess},
          {"empty_replies", emptyReplies},
          {"timeouts", timeouts},
          {"crashes", crashes},
          {"restarts", restarts},
          {"stops", stops},
          {"gave_up", gaveUp},
          {"last_problem", lastProblem}};
}

/// Per task: what this incarnation of the agent has been told.
struct TaskState {
  bool announced = false;
  /// History entries sent as feedback.
  size_t sent = 0;
  /// Proposals refused since the last feedback.
  json refused = json::array();
  int emptyStreak = 0;
  bool stopped = false;
  /// The best usable trial sent so far.
  double bestMs = TrialRecord::NaN;
  json best;
};

struct ExternalAgentHost::Impl {
  ExternalAgentHost &host;
  std::vector<Task> &tasks;
  ExternalAgentOptions options;
  std::function<void(const std::string &)> warn;
  std::unique_ptr<AgentProcess> process;
  std::vector<TaskState> states;
  std::map<std::string, int> warned;
  std::ofstream transcript;
  /// Starts so far (the first and the restarts).
  int starts = 0;

  Impl(ExternalAgentHost &host, std::vector<Task> &tasks,
       ExternalAgentOptions options,
       std::function<void(const std::string &)> warn)
      : host(host), tasks(tasks), options(std::move(options)),
        warn(std::move(warn)), states(tasks.size()) {
    if (!this->options.transcriptPath.empty())
      transcript.open(this->options.transcriptPath, std::ios::app);
  }

  AgentEvents &counts() { return host.counts; }

  void note(char direction, const std::string &text) {
    if (!transcript.is_open())
      return;
    // kopt's own lines are whole (each one JSON: the schema check reads
    // them); the agent's are cut at 4 KiB.
    transcript << direction << ' '
               << (direction == '<' && text.size() > 4096
                       ? sched::abbreviate(text, 4096)
                       : text)
               << '\n';
    transcript.flush();
  }

  /// An event: counted by the caller, logged here (the first 20 of a kind
  /// reach `warn`).
  void event(const std::string &kind, const std::string &message) {
    counts().lastProblem = message;
    note('!', message);
    int &n = warned[kind];
    if (warn && n < 20)
      warn(message + (n == 19 ? " (further " + kind + " events not shown)"
                              : ""));
    ++n;
  }

  AgentProcess::Clock::time_point deadline() const {
    return AgentProcess::Clock::now() +
           std::chrono::milliseconds(options.replyTimeoutMs);
  }

  /// Sends a message; false (and the agent treated as crashed) when it
  /// cannot take it.
  bool send(const json &message) {
    std::string line =
        message.dump(-1, ' ', false, json::error_handler_t::replace);
    note('>', line);
    if (manifest::Status s = process->writeLine(line, deadline()); !s.ok()) {
      failed("crash", s.message());
      return false;
    }
    return true;
  }

  /// The agent crashed or hung: stopped; restarted at the next proposal
  /// when restarts are left.
  void failed(const std::string &kind, const std::string &why) {
    // A crashed agent is given a moment to finish exiting (its status says
    // why); a hung one is stopped at once.
    std::string how = process ? process->stop(kind == "timeout" ? 0 : 500) : "";
    process.reset();
    if (kind == "timeout")
      ++counts().timeouts;
    else
      ++counts().crashes;
    for (TaskState &s : states) {
      s.announced = false;
      s.sent = 0;
      s.bestMs = TrialRecord::NaN;
      s.best = json();
    }
    bool again = starts <= options.maxRestarts;
    event(kind, "agent: " + why + (how.empty() ? "" : "; it " + how) +
                    (again ? "; restarting it"
                           : "; no restarts left: the agent is given up on"));
    if (!again)
      counts().gaveUp = true;
  }

  void giveUp(const std::string &why) {
    if (process)
      process->stop(0);
    process.reset();
    counts().gaveUp = true;
    event("fatal", "agent: " + why + ": the agent is given up on");
  }

  enum class Got { Reply, Failed };
  /// Waits for a reply of one of `types`; other lines are counted and
  /// skipped. On Failed the agent has been stopped.
  Got receive(const std::vector<std::string> &types, json &reply) {
    auto until = deadline();
    for (;;) {
      std::string line;
      switch (process->readLine(line, options.maxLineBytes, until)) {
      case AgentProcess::Read::Timeout:
        failed("timeout", "no reply within " +
                              std::to_string(options.replyTimeoutMs) + " ms");
        return Got::Failed;
      case AgentProcess::Read::Closed: {
        failed("crash", "closed its output before replying");
        return Got::Failed;
      }
      case AgentProcess::Read::TooLong:
        note('<', line + "... (over the line limit)");
        ++counts().tooLongLines;
        event("too-long", "agent: a line over " +
                              std::to_string(options.maxLineBytes) +
                              " bytes skipped: " + sched::abbreviate(line, 60));
        continue;
      case AgentProcess::Read::Line:
        break;
      }
      note('<', line);
      if (line.find_first_not_of(" \t") == std::string::npos)
        continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      std::string type;
      if (j.is_object() && j.contains("type") && j["type"].is_string())
        type = j["type"].get<std::string>();
      if (type == "log") {
        // Free text for the transcript (an LLM's reasoning, say).
        continue;
      }
      if (std::find(types.begin(), types.end(), type) != types.end()) {
        reply = std::move(j);
        return Got::Reply;
      }
      ++counts().malformedLines;
      std::string expected;
      for (const std::string &t : types)
        expected += (expected.empty() ? "" : " or ") + t;
      event("malformed",
            "agent: skipped a line that is not a " + expected + " message: " +
                (j.is_discarded() ? "not JSON: " : "") +
                sched::abbreviate(line, 80));
    }
  }

  /// A running agent that has answered hello; false when none can be had.
  bool ensureStarted() {
    while (!process) {
      if (counts().gaveUp)
        return false;
      if (starts > 0)
        ++counts().restarts;
      ++starts;
      manifest::Expected<std::unique_ptr<AgentProcess>> p =
          AgentProcess::start(options.command);
      if (!p.ok()) {
        giveUp(p.error());
        return false;
      }
      process = std::move(*p);
      if (!send(host.helloMessage()))
        continue;
      json reply;
      if (receive({"hello"}, reply) != Got::Reply)
        continue;
      std::string protocol =
          reply.value("protocol", json()).is_string()
              ? reply["protocol"].get<std::string>()
              : "";
      json version = reply.value("version", json());
      if (protocol != kAgentProtocol || !version.is_number_integer() ||
          version.get<int64_t>() != kAgentProtocolVersion) {
        giveUp("its hello speaks " +
               (protocol.empty() ? std::string("no protocol")
                                 : "'" + sched::abbreviate(protocol, 40) +
                                       "'") +
               " version " + sched::abbreviate(version.dump(), 20) +
               "; this kopt speaks " + kAgentProtocol + " version " +
               std::to_string(kAgentProtocolVersion));
        return false;
      }
      if (reply.contains("name") && reply["name"].is_string())
        counts().name = sched::abbreviate(reply["name"].get<std::string>(), 80);
    }
    return true;
  }

  /// The feedback message of trials [from, to) of `trials`.
  json feedback(size_t index, const std::vector<Trial> &trials, size_t from,
                size_t to) {
    const Task &task = tasks[index];
    TaskState &st = states[index];
    json list = json::array();
    for (size_t i = from; i < to; ++i) {
      const TrialRecord &r = trials[i].record;
      list.push_back(host.trialJSON(task, r));
      if (r.usable() && !(r.medianMs >= st.bestMs)) {
        st.bestMs = r.medianMs;
        st.best = {{"schedule", json::parse(r.schedule, nullptr, false)},
                   {"median_ms", r.medianMs}};
      }
    }
    json m = {{"type", "feedback"},
              {"task", index},
              {"trials", list},
              {"refused", st.refused},
              {"trials_so_far", st.sent + (to - from)},
              {"best", st.best}};
    st.refused = json::array();
    return m;
  }

  void refuse(TaskState &st, size_t i, const json &entry,
              const std::string &reason) {
    if (st.refused.size() < 64)
      st.refused.push_back(
          {{"index", i}, {"schedule", echo(entry)}, {"reason", reason}});
  }

  /// The points of a schedules reply; refusals noted in the task's state.
  std::vector<int64_t> pointsOf(size_t index, const json &reply,
                                const std::vector<Trial> &history, size_t n) {
    const Task &task = tasks[index];
    TaskState &st = states[index];
    sched::MatmulSchedule base = task.heuristic;
    json baseJ = reply.value("base", json("default"));
    std::string baseError;
    if (baseJ == "best") {
      const Trial *best = nullptr;
      for (const Trial &t : history)
        if (t.record.usable() &&
            (!best || t.record.medianMs < best->record.medianMs))
          best = &t;
      if (best)
        base = task.space[best->point];
    } else if (baseJ.is_object()) {
      std::optional<sched::MatmulSchedule> s =
          sched::fromJSON(baseJ, task.heuristic, baseError);
      if (s)
        base = *s;
      else
        baseError = "base: " + baseError;
    } else if (baseJ != "default") {
      baseError = "base must be \"default\", \"best\" or a schedule object";
    }
    std::vector<int64_t> out;
    const json &list = reply.value("schedules", json());
    if (!list.is_array()) {
      ++counts().invalidSchedules;
      refuse(st, 0, reply, "the reply's schedules is not an array");
      event("invalid", "agent: a schedules reply without a schedules array");
      return out;
    }
    std::unordered_set<int64_t> tried;
    for (const Trial &t : history)
      tried.insert(t.point);
    for (size_t i = 0; i < list.size(); ++i) {
      const json &entry = list[i];
      if (out.size() >= n) {
        ++counts().excess;
        refuse(st, i, entry,
               "beyond the " + std::to_string(n) + " schedules asked for");
        continue;
      }
      std::string error = baseError;
      std::optional<sched::MatmulSchedule> s;
      if (error.empty() && !entry.is_object())
        error = "not a JSON object";
      if (error.empty())
        s = sched::fromJSON(entry, base, error);
      if (s)
        if (std::optional<std::string> why =
                sched::validate(*s, task.workload, task.target))
          error = *why;
      if (!error.empty()) {
        ++counts().invalidSchedules;
        refuse(st, i, entry, error);
        event("invalid", "agent: schedule " + std::to_string(i) +
                             " of task " + std::to_string(index) +
                             " refused: " + sched::abbreviate(error, 160));
        continue;
      }
      int64_t p = task.indexOf(*s);
      if (p < 0) {
        ++counts().outsideSpace;
        refuse(st, i, entry,
               "valid, but not a point of this session's space (a replay "
               "table without it, or a parameter value the search leaves "
               "out)");
        continue;
      }
      if (!tried.insert(p).second) {
        ++counts().duplicates;
        refuse(st, i, entry,
               "tried already in this session (or twice in this reply)");
        continue;
      }
      out.push_back(p);
    }
    return out;
  }

  std::vector<int64_t> propose(size_t index, const std::vector<Trial> &history,
                               size_t n) {
    TaskState &st = states[index];
    while (!st.stopped && ensureStarted()) {
      if (!st.announced) {
        if (!send(host.taskMessage(index)))
          continue;
        st.announced = true;
        st.sent = 0;
      }
      if (st.sent < history.size() || !st.refused.empty()) {
        if (!send(feedback(index, history, st.sent, history.size())))
          continue;
        st.sent = history.size();
      }
      if (!send({{"type", "propose"},
                 {"task", index},
                 {"n", n},
                 {"trials_so_far", history.size()}}))
        continue;
      json reply;
      if (receive({"schedules", "stop"}, reply) != Got::Reply)
        continue;
      ++counts().replies;
      if (reply["type"] == "stop") {
        ++counts().stops;
        st.stopped = true;
        std::string why = reply.value("reason", json("")).is_string()
                              ? reply["reason"].get<std::string>()
                              : "";
        note('!', "agent stopped task " + std::to_string(index) +
                      (why.empty() ? "" : ": " + sched::abbreviate(why, 200)));
        break;
      }
      std::vector<int64_t> points = pointsOf(index, reply, history, n);
      if (!points.empty()) {
        st.emptyStreak = 0;
        return points;
      }
      ++counts().emptyReplies;
      if (++st.emptyStreak >= options.maxEmptyReplies) {
        st.stopped = true;
        event("empty", "agent: " + std::to_string(st.emptyStreak) +
                           " replies in a row without a new valid schedule "
                           "for task " +
                           std::to_string(index) + ": the task ends");
      }
    }
    return {};
  }

  /// `results` were appended to the history the agent last saw.
  void observe(size_t index, const std::vector<Trial> &results) {
    TaskState &st = states[index];
    if (!process || !st.announced)
      return; // the next proposal sends the whole history again
    if (send(feedback(index, results, 0, results.size())))
      st.sent += results.size();
  }
};

/// The Agent of one task, served by the host's process.
class ExternalAgent : public Agent {
public:
  ExternalAgent(ExternalAgentHost::Impl &impl, size_t index)
      : impl(impl), index(index) {}
  std::string name() const override { return "external"; }
  std::vector<int64_t> propose(const Task &, const std::vector<Trial> &history,
                               size_t n) override {
    return impl.propose(index, history, n);
  }
  void observe(const Task &, const std::vector<Trial> &results) override {
    impl.observe(index, results);
  }

private:
  ExternalAgentHost::Impl &impl;
  size_t index;
};


ExternalAgentHost::ExternalAgentHost(
    std::vector<Task> &tasks, ExternalAgentOptions options,
    std::function<void(const std::string &)> warn)
    : impl(std::make_unique<Impl>(*this, tasks, std::move(options),
                                  std::move(warn))) {}

ExternalAgentHost::~ExternalAgentHost() { finish(); }

std::unique_ptr<Agent> ExternalAgentHost::agentFor(size_t index) {
  return std::make_unique<ExternalAgent>(*impl, index);
}

void ExternalAgentHost::finish() {
  if (!impl->process)
    return;
  // An agent that has exited by now (after stopping its tasks, say) is not
  // a crash: done is only offered.
  if (!impl->process->exited()) {
    std::string line = json{{"type", "done"}}.dump();
    impl->note('>', line);
    (void)impl->process->writeLine(line, impl->deadline());
  }
  std::string how = impl->process->stop(2000);
  impl->note('!', "agent " + how);
  impl->process.reset();
}

json ExternalAgentHost::helloMessage() const {
  return {{"type", "hello"},
          {"protocol", kAgentProtocol},
          {"version", kAgentProtocolVersion},
          {"kopt_version", impl->options.koptVersion},
          {"measurer", impl->options.measurer},
          {"budget", impl->options.budget},
          {"batch_size", impl->options.batchSize},
          {"seed", impl->options.seed},
          {"tasks", impl->tasks.size()}};
}

json ExternalAgentHost::taskMessage(size_t index) const {
  const Task &task = impl->tasks[index];
  json space = sched::spaceJSON(task.workload, task.target,
                                int64_t(task.space.size()));
  double floorMs = rooflineFloorMs(task);
  json m = {{"type", "task"},
            {"task", index},
            {"kernel", task.kernel},
            {"ops", task.ops},
            {"launches", task.launches},
            {"flops", task.flops},
            {"bytes", task.bytes},
            {"workload", space["workload"]},
            {"target", space["target"]},
            {"roofline",
             {{"floor_ms", floorMs},
              {"peak_tflops", rooflinePeakFlops(task) / 1e12},
              {"peak_gbps", rooflineBandwidth() / 1e9},
              {"source", "NVIDIA H200 SXM datasheet, dense rates"}}},
            {"default", space["default"]}};
  space.erase("workload");
  space.erase("target");
  space.erase("default");
  m["space"] = space;
  return m;
}

json ExternalAgentHost::trialJSON(const Task &task,
                                  const TrialRecord &r) const {
  json t = {{"schedule", json::parse(r.schedule, nullptr, false)},
            {"is_default", r.schedule == scheduleText(task.heuristic)},
            {"status", r.status},
            {"error", r.error},
            {"correct", r.correct},
            {"measurer", r.measurer},
            {"ptxas",
             {{"registers", countOrNull(r.registers)},
              {"spill_bytes", countOrNull(r.spillBytes)},
              {"shared_bytes", countOrNull(r.sharedBytes)}}},
            {"runs", r.runs}};
  if (std::isfinite(r.medianMs) && r.medianMs > 0) {
    t["time_ms"] = {{"median", r.medianMs},      {"min", numberOrNull(r.minMs)},
                    {"max", numberOrNull(r.maxMs)},
                    {"mean", numberOrNull(r.meanMs)},
                    {"stddev", numberOrNull(r.stddevMs)},
                    {"p10", numberOrNull(r.p10Ms)},
                    {"p90", numberOrNull(r.p90Ms)}};
    double s = r.medianMs * 1e-3;
    t["tflops"] = double(task.flops) / s / 1e12;
    t["gbps"] = double(task.bytes) / s / 1e9;
    t["fraction_of_floor"] = rooflineFloorMs(task) / r.medianMs;
  } else {
    t["time_ms"] = nullptr;
  }
  if (!r.device.empty())
    t["device"] = r.device;
  if (r.smClockMHz > 0)
    t["sm_clock_mhz"] = r.smClockMHz;
  return t;
}

} // namespace kopt::search
