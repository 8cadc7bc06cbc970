//===- DatabaseProcessTest.cpp - The tuning database under processes -----===//
//
// Two processes writing one database at once, and a writer killed with
// SIGKILL in the middle of its transactions (include/kopt/Search/Database.h).
//
//===----------------------------------------------------------------------===//

#include "DatabaseTestUtil.h"

using namespace kopt::search::dbtest;

namespace {

//===----------------------------------------------------------------------===//
// Processes
//===----------------------------------------------------------------------===//

/// Forks a child that waits until the pipe `gate` is closed by the parent,
/// then runs `body` and exits with its result. The child never returns into
/// the test.
template <typename F> pid_t forkChild(const int gate[2], F body) {
  pid_t pid = fork();
  if (pid == 0) {
    close(gate[1]);
    char c;
    while (read(gate[0], &c, 1) > 0) {
    }
    close(gate[0]);
    _exit(body());
  }
  return pid;
}

/// Two processes, each opening the database itself, each adding `perChild`
/// trials in separate transactions at once.
void twoWriters(const std::string &path, int perChild) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = forkChild(gate, [&]() -> int {
      auto db = Database::open(path);
      if (!db.ok()) {
        fprintf(stderr, "child %d: %s\n", k, db.error().c_str());
        return 2;
      }
      for (int i = 0; i < perChild; ++i) {
        TrialRecord r = trial(1.0 + i, 64 + k, i);
        r.session = "writer-" + std::to_string(k);
        Status st = (*db)->add(r);
        if (!st.ok()) {
          fprintf(stderr, "child %d: %s\n", k, st.message().c_str());
          return 3;
        }
      }
      return 0;
    });
    ASSERT_GT(kids[k], 0);
  }
  close(gate[0]);
  close(gate[1]); // go
  for (pid_t kid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(kid, &status, 0), kid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto db = Database::open(path);
  ASSERT_TRUE(db.ok()) << db.error();
  EXPECT_EQ(count(**db), 2 * perChild);
  for (int k = 0; k < 2; ++k) {
    auto rows = (*db)->trials("", "writer-" + std::to_string(k));
    ASSERT_TRUE(rows.ok());
    ASSERT_EQ(rows->size(), static_cast<size_t>(perChild));
    // Each writer's rows in its order.
    for (int i = 0; i < perChild; ++i)
      EXPECT_EQ((*rows)[i].medianMs, 1.0 + i);
  }
  auto ok = (*db)->integrityOk();
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(*ok);
}

TEST_F(DatabaseTest, TwoProcessesWriteAtOnce) {
  std::string path = file("tune.db");
  { ASSERT_TRUE(openOrDie(path)); }
  twoWriters(path, 300);
}

TEST_F(DatabaseTest, TwoProcessesCreateTheFileAtOnce) {
  twoWriters(file("new.db"), 50);
}

TEST_F(DatabaseTest, AKilledWriterLeavesWholeTransactions) {
  std::string path = file("tune.db");
  constexpr int kBatch = 50;
  int gate[2], report[2];
  ASSERT_EQ(pipe(gate), 0);
  ASSERT_EQ(pipe(report), 0);
  // The child reports each commit: {0, id} for one trial, {1, k} for batch k.
  pid_t kid = forkChild(gate, [&]() -> int {
    close(report[0]);
    auto db = Database::open(path);
    if (!db.ok())
      return 2;
    for (int64_t i = 0;; ++i) {
      TrialRecord r = trial(1.0 + i, 64, static_cast<int>(i));
      r.session = "single";
      if (!(*db)->add(r).ok())
        return 3;
      int64_t msg[2] = {0, r.id};
      if (write(report[1], msg, sizeof(msg)) != sizeof(msg))
        return 4;
      if (i % 3 == 0) {
        std::vector<TrialRecord> batch;
        for (int j = 0; j < kBatch; ++j) {
          batch.push_back(trial(1.0 + j, 128, j));
          batch.back().session = "batch-" + std::to_string(i);
        }
        if (!(*db)->addAll(batch).ok())
          return 5;
        int64_t done[2] = {1, i};
        if (write(report[1], done, sizeof(done)) != sizeof(done))
          return 4;
      }
    }
  });
  ASSERT_GT(kid, 0);
  close(gate[0]);
  close(report[1]);
  close(gate[1]); // go

  std::vector<int64_t> reportedSingles, reportedBatches;
  std::string pending; // bytes of a message not read whole yet
  auto readReport = [&](int timeoutMs) {
    pollfd p{report[0], POLLIN, 0};
    if (poll(&p, 1, timeoutMs) <= 0)
      return false;
    char buf[4096];
    ssize_t n = read(report[0], buf, sizeof(buf));
    if (n <= 0)
      return false;
    pending.append(buf, n);
    constexpr size_t kMsg = 2 * sizeof(int64_t);
    size_t whole = pending.size() / kMsg * kMsg;
    for (size_t at = 0; at < whole; at += kMsg) {
      int64_t msg[2];
      std::memcpy(msg, pending.data() + at, kMsg);
      (msg[0] == 0 ? reportedSingles : reportedBatches).push_back(msg[1]);
    }
    pending.erase(0, whole);
    return true;
  };
  // Wait for the first commit, then let it write for ~200 ms.
  ASSERT_TRUE(readReport(30000)) << "the writer never committed";
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < deadline)
    readReport(5);
  ASSERT_EQ(kill(kid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(kid, &status, 0), kid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << status;
  while (readReport(0)) {
  }
  close(report[0]);
  ASSERT_GE(reportedBatches.size(), 1u);

  auto db = Database::open(path);
  ASSERT_TRUE(db.ok()) << db.error();
  auto ok = (*db)->integrityOk();
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(*ok);
  auto rows = (*db)->trials();
  ASSERT_TRUE(rows.ok()) << rows.error();
  std::map<std::string, int64_t> perSession;
  std::set<int64_t> ids;
  for (const TrialRecord &r : *rows) {
    ++perSession[r.session];
    ids.insert(r.id);
  }
  int64_t batchesPresent = 0;
  for (auto &[session, n] : perSession) {
    if (session == "single")
      continue;
    ASSERT_EQ(session.rfind("batch-", 0), 0u) << session;
    EXPECT_EQ(n, kBatch) << session << ": a batch is there only in part";
    ++batchesPresent;
  }
  // Whatever the writer saw committed is there, and at most one more
  // transaction (committed, not yet reported).
  for (int64_t k : reportedBatches)
    EXPECT_EQ(perSession["batch-" + std::to_string(k)], kBatch) << k;
  for (int64_t id : reportedSingles)
    EXPECT_TRUE(ids.count(id)) << id;
  int64_t singles = perSession["single"];
  EXPECT_GE(singles, static_cast<int64_t>(reportedSingles.size()));
  EXPECT_LE(singles, static_cast<int64_t>(reportedSingles.size()) + 1);
  EXPECT_GE(batchesPresent, static_cast<int64_t>(reportedBatches.size()));
  EXPECT_LE(batchesPresent, static_cast<int64_t>(reportedBatches.size()) + 1);
  EXPECT_EQ(static_cast<int64_t>(rows->size()),
            singles + kBatch * batchesPresent);

  // And the database takes new trials.
  TrialRecord r = trial(0.5);
  r.session = "after";
  Status st = (*db)->add(r);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(count(**db), static_cast<int64_t>(rows->size()) + 1);
  ok = (*db)->integrityOk();
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(*ok);
}

} // namespace
