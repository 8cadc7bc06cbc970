//===- AgentProcess.cpp - A child process spoken to in lines --------------===//
//
// See AgentProcess.h.
//
//===----------------------------------------------------------------------===//

#include "AgentProcess.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace kopt::search {

using manifest::Expected;
using manifest::Status;

namespace {

int msUntil(AgentProcess::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - AgentProcess::Clock::now())
                  .count();
  return left <= 0 ? 0 : left > 1 << 30 ? 1 << 30 : int(left);
}

std::string describe(int raw) {
  if (WIFEXITED(raw))
    return "exited with status " + std::to_string(WEXITSTATUS(raw));
  if (WIFSIGNALED(raw))
    return "was killed by signal " + std::to_string(WTERMSIG(raw)) + " (" +
           strsignal(WTERMSIG(raw)) + ")";
  return "ended (wait status " + std::to_string(raw) + ")";
}

} // namespace

Expected<std::unique_ptr<AgentProcess>>
AgentProcess::start(const std::string &command) {
  // stdin: a socket (a write to a dead reader fails with EPIPE under
  // MSG_NOSIGNAL instead of raising SIGPIPE); stdout: a pipe, so that an
  // agent closing its stdout is seen at once as the end of its output.
  int sv[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::error(std::string("cannot create the agent's socket: ") +
                         std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::error(std::string("cannot create the agent's pipe: ") +
                         std::strerror(e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears CLOEXEC on the child's copies.
  posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that ending it ends what it started; default
  // signal dispositions whatever this process ignores.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETSIGMASK);
  std::string shell = "/bin/sh", dashC = "-c", cmd = command;
  char *argv[] = {shell.data(), dashC.data(), cmd.data(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, shell.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(sv[0]);
    ::close(out[0]);
    return Status::error("cannot start the agent '" + command +
                         "': " + std::strerror(rc));
  }
  ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  std::unique_ptr<AgentProcess> p(new AgentProcess());
  p->fd = sv[0];
  p->outFd = out[0];
  p->child = pid;
  return p;
}

AgentProcess::~AgentProcess() {
  if (!reaped && child > 0)
    stop(0);
  if (fd >= 0)
    ::close(fd);
  if (outFd >= 0)
    ::close(outFd);
}

Status AgentProcess::writeLine(const std::string &line,
                               Clock::time_point deadline) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      int left = msUntil(deadline);
      if (left == 0 || ::poll(&p, 1, left) == 0)
        return Status::error("writing to the agent timed out (it reads "
                             "nothing)");
      continue;
    }
    return Status::error(std::string("the agent closed its input (") +
                         std::strerror(errno) + ")");
  }
  return Status::success();
}

AgentProcess::Read AgentProcess::readLine(std::string &line, size_t maxBytes,
                                          Clock::time_point deadline) {
  for (;;) {
    size_t nl = pending.find('\n');
    if (nl != std::string::npos) {
      if (skipping) {
        // The rest of an over-long line: dropped; `line` already holds its
        // start.
        pending.erase(0, nl + 1);
        skipping = false;
        return Read::TooLong;
      }
      if (nl > maxBytes) {
        line = pending.substr(0, 200);
        pending.erase(0, nl + 1);
        return Read::TooLong;
      }
      line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      return Read::Line;
    }
    if (!skipping && pending.size() > maxBytes) {
      line = pending.substr(0, 200);
      pending.clear();
      skipping = true;
    } else if (skipping) {
      pending.clear();
    }
    if (closed)
      return Read::Closed;
    pollfd p{outFd, POLLIN, 0};
    int left = msUntil(deadline);
    int r = left == 0 ? 0 : ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      return Read::Timeout;
    char buf[65536];
    ssize_t n = ::read(outFd, buf, sizeof(buf));
    if (n > 0) {
      pending.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    closed = true; // EOF or an error: nothing more comes
    if (!pending.empty() && !skipping) {
      // A last line without its newline.
      line = pending;
      pending.clear();
      if (line.size() > maxBytes) {
        line.resize(200);
        return Read::TooLong;
      }
      return Read::Line;
    }
    return Read::Closed;
  }
}

void AgentProcess::reap(int raw) {
  reaped = true;
  status = describe(raw);
}

bool AgentProcess::exited(std::string *how) {
  if (!reaped && child > 0) {
    int raw = 0;
    if (::waitpid(child, &raw, WNOHANG) == child)
      reap(raw);
  }
  if (how)
    *how = status;
  return reaped;
}

std::string AgentProcess::stop(int graceMs) {
  if (child <= 0)
    return "not started";
  ::shutdown(fd, SHUT_WR);
  auto waitFor = [&](int ms) {
    auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (!exited()) {
      if (Clock::now() >= end)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  };
  if (waitFor(graceMs))
    return status;
  ::kill(-child, SIGTERM);
  if (waitFor(500))
    return "was stopped with SIGTERM";
  ::kill(-child, SIGKILL);
  int raw = 0;
  if (::waitpid(child, &raw, 0) == child)
    reap(raw);
  return "was stopped with SIGKILL";
}

} // namespace kopt::search
