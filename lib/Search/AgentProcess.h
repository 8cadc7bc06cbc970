//===- AgentProcess.h - A child process spoken to in lines ------*- C++ -*-===//
//
// Not installed: the external agent's transport (ExternalAgent.cpp). The
// child runs `/bin/sh -c COMMAND` in its own process group, its stdin one end
// of a UNIX socket pair, so that a write to a dead child fails with EPIPE
// instead of raising SIGPIPE (send with MSG_NOSIGNAL), its stdout a pipe, so
// that closing it is seen as the end of its output, and its stderr
// inherited. Every read and write waits at most until a
// deadline (poll), so that a hung or silent child is given up on, never
// waited for forever. POSIX only.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_SEARCH_AGENTPROCESS_H
#define KOPT_LIB_SEARCH_AGENTPROCESS_H

#include "kopt/Manifest/Error.h"

#include <chrono>
#include <memory>
#include <string>
#include <sys/types.h>

namespace kopt::search {

class AgentProcess {
public:
  using Clock = std::chrono::steady_clock;

  /// Starts `/bin/sh -c command`. An error names the command and the cause.
  static manifest::Expected<std::unique_ptr<AgentProcess>>
  start(const std::string &command);
  /// Ends the child (see stop) when it still runs.
  ~AgentProcess();

  /// Writes `line` and a newline before `deadline`. An error when the child
  /// closed its input or exited ("the agent closed its input"), or when it
  /// did not take the bytes in time ("... timed out").
  manifest::Status writeLine(const std::string &line, Clock::time_point deadline);

  enum class Read {
    Line,    // `line` holds one line, without its newline
    TooLong, // a line over maxBytes came and was skipped (its first 200
             // bytes in `line`)
    Timeout, // nothing whole came before the deadline
    Closed,  // the child closed its output (exited or crashed)
  };
  /// Reads the next line before `deadline`; a line over `maxBytes` is
  /// skipped to its newline (never held in memory whole).
  Read readLine(std::string &line, size_t maxBytes, Clock::time_point deadline);

  /// Closes the child's input, waits up to `graceMs` for it to exit, then
  /// sends SIGTERM to its process group, and SIGKILL after 500 ms more.
  /// Returns how it ended: "exited with status N", "was killed by signal N
  /// (NAME)", "was stopped with SIGTERM" (or SIGKILL).
  std::string stop(int graceMs);

  /// Whether the child has exited (reaped); `how` as stop's.
  bool exited(std::string *how = nullptr);

  pid_t pid() const { return child; }

private:
  AgentProcess() = default;
  /// Our end of the child's stdin (socket) and of its stdout (pipe).
  int fd = -1, outFd = -1;
  pid_t child = -1;
  bool reaped = false;
  std::string status;
  /// Bytes read past the last line returned.
  std::string pending;
  bool skipping = false;
  bool closed = false;

  void reap(int rawStatus);
};

} // namespace kopt::search

#endif // KOPT_LIB_SEARCH_AGENTPROCESS_H
