//===- ExternalAgentTest.cpp - The external agent and its transport -------===//
//
// AgentProcess (lines, limits, deadlines, ending a child that ignores
// SIGTERM) and ExternalAgentHost driven by the tuner with the model measurer
// and agents written in sh, so that no interpreter beyond /bin/sh is needed.
// test/Tools/kopt-tune-external.test covers kopt-tune's side with Python
// agents that misbehave on purpose.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/ExternalAgent.h"
#include "AgentProcess.h"
#include "SearchTestUtil.h"
#include "kopt/Search/Measurer.h"
#include "kopt/Search/Tuner.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace kopt::search;
namespace sched = kopt::schedule;
using json = nlohmann::json;
using Clock = AgentProcess::Clock;
using kopt::search::test::makeTask;

namespace {

Clock::time_point in(int ms) {
  return Clock::now() + std::chrono::milliseconds(ms);
}

std::unique_ptr<AgentProcess> startOrDie(const std::string &command) {
  auto p = AgentProcess::start(command);
  EXPECT_TRUE(p.ok()) << p.error();
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(AgentProcess, LinesLimitsAndEnd) {
  // Echoes one line, then prints a 100 000-byte line and a short one, exits.
  auto p = startOrDie("read x; echo \"got $x\"; head -c 100000 /dev/zero | tr "
                      "'\\0' a; echo; echo after; exit 3");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->writeLine("hi", in(5000)).ok());
  std::string line;
  ASSERT_EQ(p->readLine(line, 1000, in(5000)), AgentProcess::Read::Line);
  EXPECT_EQ(line, "got hi");
  ASSERT_EQ(p->readLine(line, 1000, in(5000)), AgentProcess::Read::TooLong);
  EXPECT_EQ(line, std::string(200, 'a'));
  ASSERT_EQ(p->readLine(line, 1000, in(5000)), AgentProcess::Read::Line);
  EXPECT_EQ(line, "after");
  EXPECT_EQ(p->readLine(line, 1000, in(5000)), AgentProcess::Read::Closed);
  EXPECT_EQ(p->stop(2000), "exited with status 3");
}

/// Processes of group `pgid` that are not zombies (from /proc/PID/stat).
int liveInGroup(pid_t pgid) {
  int n = 0;
  for (const auto &e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line))
      continue;
    size_t close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    long ppid = 0, group = 0;
    rest >> state >> ppid >> group;
    if (group == pgid && state != 'Z')
      ++n;
  }
  return n;
}

TEST(AgentProcess, DeadlinesAndStubbornChildren) {
  // Reads nothing, ignores SIGTERM, and has a child of its own.
  auto p = startOrDie("trap '' TERM; sleep 100 & sleep 100");
  ASSERT_TRUE(p);
  std::string line;
  auto t0 = Clock::now();
  EXPECT_EQ(p->readLine(line, 1000, in(200)), AgentProcess::Read::Timeout);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  pid_t group = p->pid();
  EXPECT_EQ(p->stop(0), "was stopped with SIGKILL");
  // The whole process group is gone, the background sleep with it (zombies
  // aside: an orphan's is reaped by init, which a container may lack).
  for (int i = 0; i < 100 && liveInGroup(group) > 0; ++i)
    ::usleep(10000);
  EXPECT_EQ(liveInGroup(group), 0);
  // Writing to it now fails cleanly (no SIGPIPE).
  EXPECT_FALSE(p->writeLine("anyone?", in(200)).ok());
}

TEST(AgentProcess, MissingProgram) {
  auto p = startOrDie("no-such-program-kopt-test 2>/dev/null");
  ASSERT_TRUE(p);
  std::string line;
  EXPECT_EQ(p->readLine(line, 1000, in(5000)), AgentProcess::Read::Closed);
  EXPECT_EQ(p->stop(2000), "exited with status 127");
}

/// An sh agent: answers hello, then every proposal with `reply`.
std::string shAgent(const std::string &reply) {
  return "while read -r line; do case \"$line\" in "
         "*'\"type\":\"hello\"'*) echo '{\"type\":\"hello\",\"protocol\":"
         "\"kopt-agent\",\"version\":1,\"name\":\"sh\"}';; "
         "*'\"type\":\"propose\"'*) echo '" +
         reply + "';; esac; done";
}

struct TuneRun {
  std::vector<TaskResult> results;
  AgentEvents events;
};

TuneRun tune(std::vector<Task> &tasks, const std::string &command,
             int64_t budget, ExternalAgentOptions o = {}) {
  o.command = command;
  o.replyTimeoutMs = o.replyTimeoutMs == 120000 ? 5000 : o.replyTimeoutMs;
  ExternalAgentHost host(tasks, o);
  std::unique_ptr<Measurer> m = makeModelMeasurer();
  TunerOptions t;
  t.budget = budget;
  t.batchSize = 4;
  t.agentFor = [&](size_t i, uint64_t) { return host.agentFor(i); };
  Tuner tuner(tasks, *m, nullptr, nullptr, t);
  EXPECT_TRUE(tuner.run().ok());
  host.finish();
  return {tuner.results(), host.events()};
}

TEST(ExternalAgent, PartialSchedulesOnTheDefault) {
  std::vector<Task> tasks = {makeTask(1024, 1024, 1024)};
  const Task &t = tasks[0];
  // Two stage counts other than the default's.
  std::vector<int64_t> other;
  for (int64_t st : {3, 4, 5})
    if (st != t.heuristic.stages)
      other.push_back(st);
  sched::MatmulSchedule s3 = t.heuristic, s4 = t.heuristic;
  s3.stages = other[0];
  s4.stages = other[1];
  ASSERT_GE(t.indexOf(s3), 0);
  ASSERT_GE(t.indexOf(s4), 0);
  std::string reply = "{\"type\":\"schedules\",\"schedules\":[{\"stages\":" +
                      std::to_string(s3.stages) +
                      "},{\"stages\":" + std::to_string(s4.stages) + "}]}";
  TuneRun r = tune(tasks, shAgent(reply), 20);
  ASSERT_EQ(r.results.size(), 1u);
  // The heuristic, the two schedules, then the same reply again: duplicates
  // only, three times in a row, and the task ends.
  EXPECT_EQ(r.results[0].trials, 3);
  EXPECT_EQ(r.events.name, "sh");
  EXPECT_EQ(r.events.duplicates, 6);
  EXPECT_EQ(r.events.emptyReplies, 3);
  EXPECT_EQ(r.events.crashes, 0);
  EXPECT_FALSE(r.events.gaveUp);
}

TEST(ExternalAgent, RefusalsAndBaseBest) {
  std::vector<Task> tasks = {makeTask(512, 512, 512)};
  // Refused: a block_m outside its domain, an unknown key, a non-object; the
  // swizzles on the best are new points until they run out.
  std::string reply =
      "{\"type\":\"schedules\",\"base\":\"best\",\"schedules\":[{\"block_m\":"
      "7},{\"nope\":1},3,{\"swizzle\":1},{\"swizzle\":2},{\"swizzle\":4},"
      "{\"swizzle\":8},{\"swizzle\":16}]}";
  TuneRun r = tune(tasks, shAgent(reply), 40);
  EXPECT_GE(r.results[0].trials, 2);
  EXPECT_GE(r.events.invalidSchedules, 3);
  EXPECT_FALSE(r.events.gaveUp);
}

TEST(ExternalAgent, GivenUpAfterRestarts) {
  std::vector<Task> tasks = {makeTask(256, 256, 256)};
  ExternalAgentOptions o;
  o.maxRestarts = 1;
  o.replyTimeoutMs = 300;
  // Answers hello, never a proposal.
  TuneRun r = tune(tasks, shAgent("") + " ; sleep 100", 10, o);
  // Only the heuristic was measured; two starts, two timeouts.
  EXPECT_EQ(r.results[0].trials, 1);
  EXPECT_EQ(r.events.timeouts, 2);
  EXPECT_EQ(r.events.restarts, 1);
  EXPECT_TRUE(r.events.gaveUp);
}

TEST(ExternalAgent, TaskMessage) {
  std::vector<Task> tasks = {makeTask(4096, 4096, 4096),
                             makeTask(1, 4096, 4096)};
  ExternalAgentHost host(tasks, {});
  json big = host.taskMessage(0), gemv = host.taskMessage(1);
  EXPECT_EQ(big["type"], "task");
  EXPECT_EQ(big["workload"]["m"], 4096);
  EXPECT_EQ(big["space"]["valid_points"], int64_t(tasks[0].space.size()));
  EXPECT_FALSE(big["space"]["constraints"].empty());
  EXPECT_TRUE(big["space"]["domains"].contains("block_m"));
  EXPECT_EQ(big["default"], sched::toJSON(tasks[0].heuristic));
  // 4096^3 bf16 is compute bound: 2 * 4096^3 / 989e12 s; the decode GEMV
  // moves its 32 MiB weight: bytes / 4.8e12 s.
  EXPECT_NEAR(big["roofline"]["floor_ms"].get<double>(),
              2.0 * 4096 * 4096 * 4096 / 989e12 * 1e3, 1e-9);
  EXPECT_NEAR(gemv["roofline"]["floor_ms"].get<double>(),
              double(tasks[1].bytes) / 4.8e12 * 1e3, 1e-9);
  json hello = host.helloMessage();
  EXPECT_EQ(hello["protocol"], "kopt-agent");
  EXPECT_EQ(hello["version"], 1);
  EXPECT_EQ(hello["tasks"], 2);
}

} // namespace
