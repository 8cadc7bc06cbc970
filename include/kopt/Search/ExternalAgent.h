//===- ExternalAgent.h - Any program as the search agent --------*- C++ -*-===//
//
// `kopt-tune --strategy=external --agent-cmd "..."`: a program (a Python
// script, an LLM adapter, another search library) proposes the schedules.
// kopt speaks to it over the kopt-agent protocol, version 1: JSON objects,
// one per line, on the program's stdin and stdout (docs/agent-protocol.md
// gives every message and docs/agent-protocol.schema.json their schema):
//
//   kopt  -> agent   hello     protocol, version, kopt version, measurer,
//                              budget, batch size, seed, task count
//   agent -> kopt    hello     protocol and version it speaks, its name
//   kopt  -> agent   task      a kernel: op chain, workload, target, FLOPs,
//                              bytes, roofline floor, the space (parameter
//                              domains, constraints as rules), the default
//                              schedule
//   kopt  -> agent   propose   "n schedules for task T, please"
//   agent -> kopt    schedules up to n schedules, each only the parameters
//                              that differ from a base (the default or the
//                              best so far), or
//                    stop      nothing more for this task
//   kopt  -> agent   feedback  the batch's trials (status, short error,
//                              ptxas resources, correctness, time
//                              statistics, TFLOP/s, GB/s, fraction of the
//                              roofline floor), the proposals kopt refused
//                              and why, the best so far
//   kopt  -> agent   done      the session is over (then stdin closes)
//
// The agent can only choose schedules: a proposal is read as a schedule
// (schedule::fromJSON: unknown keys and out-of-domain values refused),
// checked against the constraints and looked up in the task's space; nothing
// else of a reply is used, and no path or file of the session is sent.
//
// Misbehaviour is logged, counted and survived: a line that is no JSON, of an
// unknown type, or over the line limit is skipped (the reply is still waited
// for until the deadline); an invalid, duplicate or out-of-space proposal is
// refused and reported back in the next feedback; replies that yield no new
// schedule `maxEmptyReplies` times in a row end the task; an agent that
// exits, closes its output or misses the reply deadline is stopped (its
// process group killed) and restarted up to `maxRestarts` times, a restarted
// agent getting hello, the tasks and their history again; after that, or
// after a hello of another protocol or version, the agent is given up on and
// its tasks end (the trials measured stay recorded).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_EXTERNALAGENT_H
#define KOPT_SEARCH_EXTERNALAGENT_H

#include "kopt/Search/Agent.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kopt::search {

/// The protocol's name and the version this kopt speaks.
constexpr const char *kAgentProtocol = "kopt-agent";
constexpr int kAgentProtocolVersion = 1;

struct ExternalAgentOptions {
  /// Run by /bin/sh -c in kopt-tune's working folder.
  std::string command;
  /// How long the agent may take for one reply (hello or schedules), ms.
  int replyTimeoutMs = 120000;
  /// The longest reply line taken, bytes; a longer one is skipped.
  size_t maxLineBytes = size_t(1) << 20;
  /// Restarts after a crash or a missed deadline.
  int maxRestarts = 2;
  /// Replies in a row with no new valid schedule before a task ends.
  int maxEmptyReplies = 3;
  /// Told to the agent in hello (the seed: the run's, for agents that draw
  /// at random).
  int64_t budget = 0, batchSize = 0;
  uint64_t seed = 0;
  std::string koptVersion, measurer;
  /// Every line sent ("> ...", whole) and received ("< ...", at most 4 KiB of
  /// each)
  /// and every event ("! ..."), when not empty.
  std::string transcriptPath;
};

/// What the agent did wrong (or right), for the final report.
struct AgentEvents {
  int64_t replies = 0;          // schedules and stop replies taken
  int64_t malformedLines = 0;   // not JSON, not an object, unknown type
  int64_t tooLongLines = 0;     // over maxLineBytes
  int64_t invalidSchedules = 0; // not a schedule, or rejected by a constraint
  int64_t duplicates = 0;       // tried before, or twice in one reply
  int64_t outsideSpace = 0;     // valid but not a point of the task's space
  int64_t excess = 0;           // beyond the n asked for
  int64_t emptyReplies = 0;     // replies with no new valid schedule
  int64_t timeouts = 0;         // missed the reply deadline
  int64_t crashes = 0;          // exited or closed its output mid-session
  int64_t restarts = 0;
  int64_t stops = 0;            // tasks the agent stopped
  bool gaveUp = false;          // the agent was given up on
  std::string name;             // from its hello
  std::string lastProblem;      // the last event, for the report
  nlohmann::json toJSON() const;
};

/// One agent process serving every task of a tuning session.
class ExternalAgentHost {
public:
  /// Prepares the host; the process starts at the first proposal. `warn`
  /// receives each event's message (at most 20 of a kind; the counts keep
  /// going).
  ExternalAgentHost(std::vector<Task> &tasks, ExternalAgentOptions options,
                    std::function<void(const std::string &)> warn = {});
  ~ExternalAgentHost();

  /// The Agent of task `index` (of the tasks given to the constructor).
  std::unique_ptr<Agent> agentFor(size_t index);

  /// Sends done, closes the agent's input and waits briefly for it to exit.
  void finish();

  const AgentEvents &events() const { return counts; }

  /// The JSON messages, for tests and the documentation's examples.
  nlohmann::json helloMessage() const;
  nlohmann::json taskMessage(size_t index) const;
  nlohmann::json trialJSON(const Task &task, const TrialRecord &r) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  AgentEvents counts;
  friend class ExternalAgent;
};

} // namespace kopt::search

#endif // KOPT_SEARCH_EXTERNALAGENT_H
