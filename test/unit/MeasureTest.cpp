//===- MeasureTest.cpp - The measurement library against the fake driver --===//
//
// include/kopt/Measure/Measure.h: the statistics on known sequences, the
// output scan and the option checks (pure), then Measurer against
// test/unit/FakeCuda's libcuda.so.1 (CTest sets LD_LIBRARY_PATH): run counts
// and times of a kernel with a modeled device time, buffer rotation
// (different buffers per run, tensor maps encoded once per set), the audit
// (a kernel that goes wrong only after 3 launches, unwritten outputs, NaN),
// the time budget, the watchdog (a kernel that never finishes), functions,
// and bad arguments.
//
//===----------------------------------------------------------------------===//

#include "kopt/Measure/Measure.h"
#include "FakeCuda/FakeDriverTest.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace kopt::rt;
namespace measure = kopt::measure;

namespace {

//===----------------------------------------------------------------------===//
// Pure parts
//===----------------------------------------------------------------------===//

TEST(MeasureStats, FourRuns) {
  measure::Stats s = measure::summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.minMs, 1);
  EXPECT_DOUBLE_EQ(s.maxMs, 4);
  EXPECT_DOUBLE_EQ(s.medianMs, 2.5);
  EXPECT_DOUBLE_EQ(s.meanMs, 2.5);
  EXPECT_DOUBLE_EQ(s.stddevMs, std::sqrt(5.0 / 3.0)); // n - 1
  EXPECT_DOUBLE_EQ(s.p10Ms, 1.3); // 0.1 * 3 = 0.3 between 1 and 2
  EXPECT_DOUBLE_EQ(s.p90Ms, 3.7);
}

TEST(MeasureStats, OddCountAndOutlier) {
  measure::Stats s = measure::summarize({5, 1, 3});
  EXPECT_DOUBLE_EQ(s.medianMs, 3);
  EXPECT_DOUBLE_EQ(s.stddevMs, 2);
  EXPECT_DOUBLE_EQ(s.p10Ms, 1.4);
  EXPECT_DOUBLE_EQ(s.p90Ms, 4.6);
  // The median ignores one slow run; the mean does not.
  measure::Stats o = measure::summarize({1, 1, 1, 1, 100});
  EXPECT_DOUBLE_EQ(o.medianMs, 1);
  EXPECT_DOUBLE_EQ(o.meanMs, 20.8);
  EXPECT_DOUBLE_EQ(o.p90Ms, 60.4);
}

TEST(MeasureStats, OneRunAndNone) {
  measure::Stats one = measure::summarize({0.25});
  EXPECT_DOUBLE_EQ(one.medianMs, 0.25);
  EXPECT_DOUBLE_EQ(one.p10Ms, 0.25);
  EXPECT_DOUBLE_EQ(one.p90Ms, 0.25);
  EXPECT_DOUBLE_EQ(one.stddevMs, 0);
  measure::Stats none = measure::summarize({});
  EXPECT_DOUBLE_EQ(none.medianMs, 0);
  EXPECT_DOUBLE_EQ(none.maxMs, 0);
}

TEST(MeasureStats, QuantileEnds) {
  std::vector<double> sorted = {1, 2, 4, 8, 16};
  EXPECT_DOUBLE_EQ(measure::quantile(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(measure::quantile(sorted, 1), 16);
  EXPECT_DOUBLE_EQ(measure::quantile(sorted, 0.5), 4);
  EXPECT_DOUBLE_EQ(measure::quantile(sorted, 0.875), 12); // 3.5
}

TEST(MeasureScan, F32) {
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {1.0f, NAN, 2.0f, -inf, 0.0f, 3.0f};
  uint32_t poison = 0xffffffffu;
  std::memcpy(&v[4], &poison, 4);
  measure::OutputScan s = measure::scanOutput(v.data(), DType::F32, 6);
  EXPECT_EQ(s.unwritten, 1);
  EXPECT_EQ(s.firstUnwritten, 4);
  EXPECT_EQ(s.nonFinite, 2);
  EXPECT_EQ(s.firstNonFinite, 1);
  measure::OutputScan clean = measure::scanOutput(v.data(), DType::F32, 1);
  EXPECT_EQ(clean.unwritten + clean.nonFinite, 0);
  EXPECT_EQ(clean.firstUnwritten, -1);
}

TEST(MeasureScan, Bf16AndF16) {
  // bf16: 1.0, +Inf, NaN, poison; f16: 1.0, +Inf, NaN, poison.
  std::vector<uint16_t> bf = {0x3f80, 0x7f80, 0x7fc1, 0xffff};
  measure::OutputScan b = measure::scanOutput(bf.data(), DType::BF16, 4);
  EXPECT_EQ(b.nonFinite, 2);
  EXPECT_EQ(b.firstNonFinite, 1);
  EXPECT_EQ(b.unwritten, 1);
  EXPECT_EQ(b.firstUnwritten, 3);
  std::vector<uint16_t> hf = {0x3c00, 0x7c00, 0xfe00, 0xffff};
  measure::OutputScan h = measure::scanOutput(hf.data(), DType::F16, 4);
  EXPECT_EQ(h.nonFinite, 2);
  EXPECT_EQ(h.unwritten, 1);
  // 0x4f80 is finite in both (bf16 4.3e9, f16 30.0).
  std::vector<uint16_t> finite = {0x4f80};
  EXPECT_EQ(measure::scanOutput(finite.data(), DType::F16, 1).nonFinite, 0);
  EXPECT_EQ(measure::scanOutput(finite.data(), DType::BF16, 1).nonFinite, 0);
}

TEST(MeasureOptions, Validation) {
  EXPECT_TRUE(measure::validateOptions(measure::Options()).ok());
  auto message = [](void (*edit)(measure::Options &)) {
    measure::Options o;
    edit(o);
    return measure::validateOptions(o).message();
  };
  EXPECT_EQ(message([](measure::Options &o) { o.runs = 0; }),
            "runs must be at least 1, got 0");
  EXPECT_EQ(message([](measure::Options &o) { o.minRuns = 101; }),
            "minRuns must be in [1, runs = 100], got 101");
  EXPECT_EQ(message([](measure::Options &o) { o.inputSets = 0; }),
            "inputSets must be at least 1, got 0");
  EXPECT_EQ(message([](measure::Options &o) { o.warmup = -1; }),
            "warmup must not be negative, got -1");
  EXPECT_EQ(message([](measure::Options &o) { o.timeoutMs = NAN; }),
            "timeoutMs must be a finite number >= 0, got nan");
  EXPECT_EQ(message([](measure::Options &o) { o.timeBudgetMs = -1; }),
            "timeBudgetMs must be a finite number >= 0, got -1");
  EXPECT_EQ(message([](measure::Options &o) { o.l2FlushBytes = -1; }),
            "l2FlushBytes must not be negative, got -1");
  EXPECT_EQ(message([](measure::Options &o) { o.auditRuns = -2; }),
            "auditRuns must not be negative, got -2");
}

//===----------------------------------------------------------------------===//
// Against the fake driver
//===----------------------------------------------------------------------===//

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t)
      .count();
}

bool contains(const std::vector<std::string> &errors, const std::string &s) {
  for (const std::string &e : errors)
    if (e.find(s) != std::string::npos)
      return true;
  return false;
}

class MeasureFake : public kopt::test::FakeDriverTest {
protected:
  MeasureFake() : FakeDriverTest({"measure", "ok", "tma", "bad"}) {}
  void SetUp() override {
    FakeDriverTest::SetUp();
    if (!HasFatalFailure())
      measurer = std::make_unique<measure::Measurer>(*ctx, stream);
  }
  void TearDown() override {
    measurer.reset();
    FakeDriverTest::TearDown();
  }

  const Manifest &measureJson() const { return manifests[0]; }
  const Manifest &okJson() const { return manifests[1]; }
  const Manifest &tmaJson() const { return manifests[2]; }
  const Manifest &badJson() const { return manifests[3]; }

  /// The options of a short measurement with a small flush: `runs` timed
  /// runs after `warmup` untimed ones, the last one audited.
  static measure::Options quick(int64_t warmup = 1, int64_t runs = 5) {
    measure::Options o;
    o.warmup = warmup;
    o.runs = runs;
    o.l2FlushBytes = 1 << 20;
    o.timeoutMs = 5000;
    return o;
  }
  /// quick(warmup, runs) cycling `sets` buffer sets, every run audited.
  static measure::Options auditEveryRun(int64_t warmup, int64_t runs,
                                        int64_t sets) {
    measure::Options o = quick(warmup, runs);
    o.inputSets = sets;
    o.auditRuns = runs;
    return o;
  }

  const KernelSpec &kernel(const Manifest &m, const std::string &name) {
    const KernelSpec *k = m.findKernel(name);
    EXPECT_TRUE(k) << name;
    return *k;
  }
  /// Measures kernel `name` of `m` with `o` and `audit` on new buffers whose
  /// inputs hold `value`.
  Expected<measure::Measurement> measureOn(const Manifest &m,
                                           const std::string &name, float value,
                                           const measure::Options &o,
                                           const measure::AuditFn &audit = {}) {
    const KernelSpec &k = kernel(m, name);
    return measurer->measureKernel(m, k, allocateFor(k.params, value), o,
                                   audit);
  }

  std::unique_ptr<measure::Measurer> measurer;
};

/// An audit that wants every f32 output element to be `expected`.
measure::AuditFn expectEvery(float expected) {
  return [expected](const measure::AuditRun &run) {
    for (const measure::AuditedOutput &o : run.outputs) {
      std::vector<float> v(o.bytes.size() / 4);
      std::memcpy(v.data(), o.bytes.data(), o.bytes.size());
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != expected)
          return measure::AuditVerdict{
              false, "'" + o.tensor->name + "'[" + std::to_string(i) + "] is " +
                         std::to_string(v[i]) + ", expected " +
                         std::to_string(expected)};
    }
    return measure::AuditVerdict{};
  };
}

TEST_F(MeasureFake, TimesEveryRun) {
  // relu_slow_f32 keeps the fake device busy 2 ms per launch.
  size_t launches = hooks->launchCount();
  Expected<measure::Measurement> m = measureOn(
      measureJson(), "relu_slow_f32", 2.0f, quick(), expectEvery(2.0f));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->valid()) << m->errors.front();
  EXPECT_EQ(m->runs, 5);
  EXPECT_EQ(m->warmup, 1);
  EXPECT_EQ(hooks->launchCount() - launches, 6u);
  ASSERT_EQ(m->samplesMs.size(), 5u);
  for (double ms : m->samplesMs) {
    EXPECT_GE(ms, 1.99);
    EXPECT_LT(ms, 1000.0);
  }
  EXPECT_GE(m->stats.medianMs, 1.99);
  EXPECT_GE(m->stats.p90Ms, m->stats.medianMs);
  EXPECT_GE(m->wallMs, 12.0 - 0.1); // 6 launches of 2 ms
  EXPECT_EQ(m->l2FlushBytes, 1 << 20);
  EXPECT_FALSE(m->budgetStopped);
  // The default audit: the last run only.
  ASSERT_EQ(m->audits.size(), 1u);
  EXPECT_EQ(m->audits[0].run, 4);
  EXPECT_TRUE(m->audits[0].passed);
  EXPECT_TRUE(m->auditPassed());
}

TEST_F(MeasureFake, RotationUsesOtherBuffersEveryRun) {
  // Every run audited: each set's copy of the inputs is right.
  const KernelSpec &k = kernel(measureJson(), "relu_slow_f32");
  std::vector<DevicePtr> p = allocateFor(k.params, 3.0f);
  size_t first = hooks->launchCount();
  Expected<measure::Measurement> m = measurer->measureKernel(
      measureJson(), k, p, auditEveryRun(0, 6, 3), expectEvery(3.0f));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->valid()) << m->errors.front();
  EXPECT_EQ(m->inputSets, 3);
  ASSERT_EQ(hooks->launchCount() - first, 6u);
  std::vector<std::vector<uint64_t>> runs;
  for (size_t i = 0; i < 6; ++i)
    runs.push_back(hooks->launch(first + i));
  // Set 0 is the caller's buffers; runs 0, 1, 2 use three sets with no
  // buffer in common, and runs 3, 4, 5 the same sets again.
  EXPECT_EQ(runs[0], std::vector<uint64_t>(p.begin(), p.end()));
  for (size_t a = 0; a < 3; ++a) {
    EXPECT_EQ(runs[a], runs[a + 3]);
    for (size_t b = a + 1; b < 3; ++b)
      for (uint64_t x : runs[a])
        for (uint64_t y : runs[b])
          EXPECT_NE(x, y) << "runs " << a << " and " << b;
  }
  ASSERT_EQ(m->audits.size(), 6u);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(m->audits[i].run, i);
    EXPECT_EQ(m->audits[i].set, i % 3);
    EXPECT_TRUE(m->audits[i].passed) << m->audits[i].reason;
  }
}

TEST_F(MeasureFake, RotatedTensorMapsAreEncodedOncePerSet) {
  // The fake TMA matmul leaves its result unwritten when a map does not
  // describe the buffers it is launched with: the audit of every run would
  // see the poison if a set ran with another set's maps.
  size_t encodes = hooks->encodeCount();
  Expected<measure::Measurement> m =
      measureOn(tmaJson(), "matmul_tma_bf16", 1.0f, auditEveryRun(1, 4, 2),
                expectEvery(48.0f)); // 48 products of 1 * 1
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->valid()) << m->errors.front();
  EXPECT_EQ(m->audits.size(), 4u);
  // Two maps per set, encoded when the sets are bound, never in the runs.
  EXPECT_EQ(hooks->encodeCount() - encodes, 4u);
}

TEST_F(MeasureFake, AuditCatchesAKernelThatGoesWrongLater) {
  // relu_drift_f32 is right for its first 3 launches, then adds 0.5.
  measure::Options o = quick(/*warmup=*/0, /*runs=*/6);
  o.auditRuns = 2; // runs 3 and 6 (1-based)
  Expected<measure::Measurement> m =
      measureOn(measureJson(), "relu_drift_f32", 1.0f, o, expectEvery(1.0f));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->runs, 6);
  ASSERT_EQ(m->audits.size(), 2u);
  EXPECT_EQ(m->audits[0].run, 2);
  EXPECT_TRUE(m->audits[0].passed) << m->audits[0].reason;
  EXPECT_EQ(m->audits[1].run, 5);
  EXPECT_FALSE(m->audits[1].passed);
  EXPECT_EQ(m->audits[1].reason, "'result'[0] is 1.500000, expected 1.000000");
  EXPECT_FALSE(m->valid());
  EXPECT_FALSE(m->auditPassed());
  ASSERT_EQ(m->errors.size(), 1u);
  EXPECT_EQ(m->errors[0],
            "kernel 'relu_drift_f32': timed run 6 of 6: audit failed: "
            "'result'[0] is 1.500000, expected 1.000000");
  // Its outputs stay finite and written: without a reference the audit
  // cannot tell.
  Expected<measure::Measurement> blind =
      measureOn(measureJson(), "relu_drift_f32", 1.0f, o);
  ASSERT_TRUE(blind.ok()) << blind.error();
  EXPECT_TRUE(blind->valid());
}

TEST_F(MeasureFake, RejectsNaN) {
  // sqrt_f32 gives NaN for inputs outside (0.1, 4).
  Expected<measure::Measurement> m =
      measureOn(okJson(), "sqrt_f32", -1.0f, quick());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->valid());
  ASSERT_EQ(m->audits.size(), 1u);
  EXPECT_EQ(m->audits[0].nonFinite, 1000);
  EXPECT_EQ(m->audits[0].unwritten, 0);
  ASSERT_EQ(m->errors.size(), 1u);
  EXPECT_EQ(m->errors[0], "kernel 'sqrt_f32': timed run 5 of 5: audit "
                          "failed: 1000 of 1000 elements of 'result' are NaN "
                          "or Inf (first at index 0)");
  // Allowed when asked (the runs are still audited for unwritten outputs).
  measure::Options allow = quick();
  allow.rejectNonFinite = false;
  Expected<measure::Measurement> a =
      measureOn(okJson(), "sqrt_f32", -1.0f, allow);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_TRUE(a->valid());
  EXPECT_EQ(a->audits[0].nonFinite, 1000);
}

TEST_F(MeasureFake, CatchesUnwrittenOutputs) {
  // add_unwritten_f32 writes only the first half of its result; the audited
  // run's outputs are poisoned before it.
  measure::Options o = quick();
  o.rejectNonFinite = false; // the poison counts anyway
  Expected<measure::Measurement> m =
      measureOn(badJson(), "add_unwritten_f32", 1.0f, o);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->valid());
  ASSERT_EQ(m->audits.size(), 1u);
  EXPECT_EQ(m->audits[0].unwritten, 4096);
  EXPECT_EQ(m->audits[0].reason,
            "4096 of 8192 elements of 'result' not written (still the 0xFF "
            "poison; first at index 4096)");
}

TEST_F(MeasureFake, TimeBudgetStopsEarly) {
  measure::Options o = quick(/*warmup=*/1, /*runs=*/1000);
  o.minRuns = 3;
  o.timeBudgetMs = 20; // about 10 runs of 2 ms
  Expected<measure::Measurement> m =
      measureOn(measureJson(), "relu_slow_f32", 1.0f, o, expectEvery(1.0f));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->valid());
  EXPECT_TRUE(m->budgetStopped);
  EXPECT_GE(m->runs, 3);
  EXPECT_LT(m->runs, 100);
  // The last run is audited, wherever the budget ended the runs.
  ASSERT_EQ(m->audits.size(), 1u);
  EXPECT_EQ(m->audits[0].run, m->runs - 1);
  // The minimum wins over a budget that is already spent.
  o.timeBudgetMs = 0.001;
  o.minRuns = 4;
  Expected<measure::Measurement> min =
      measureOn(measureJson(), "relu_slow_f32", 1.0f, o);
  ASSERT_TRUE(min.ok()) << min.error();
  EXPECT_EQ(min->runs, 4);
  EXPECT_TRUE(min->budgetStopped);
}

TEST_F(MeasureFake, WatchdogGivesUpOnATimedRun) {
  // relu_hang_f32 keeps the fake device busy for an hour.
  // The second measurement reuses the buffers: a copy to new ones would wait
  // for the hung device.
  const KernelSpec &k = kernel(measureJson(), "relu_hang_f32");
  std::vector<DevicePtr> p = allocateFor(k.params, 1.0f);
  measure::Options o = quick(/*warmup=*/0, /*runs=*/3);
  o.timeoutMs = 50;
  auto start = std::chrono::steady_clock::now();
  Expected<measure::Measurement> m =
      measurer->measureKernel(measureJson(), k, p, o);
  double took = msSince(start);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->timedOut);
  EXPECT_FALSE(m->valid());
  EXPECT_EQ(m->runs, 0);
  ASSERT_EQ(m->errors.size(), 1u);
  EXPECT_EQ(m->errors[0],
            "kernel 'relu_hang_f32': timed run 1 of 3 did not finish within "
            "50 ms; gave up on it (the GPU may still be running it, so the "
            "CUDA context is lost)");
  EXPECT_GE(took, 50.0);
  EXPECT_LT(took, 3000.0);
  EXPECT_TRUE(measurer->contextLost());
  // Nothing more is measured on that context.
  Expected<measure::Measurement> again =
      measurer->measureKernel(measureJson(), k, p, o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), "kernel 'relu_hang_f32': the CUDA context was "
                           "lost when an earlier run timed out; nothing more "
                           "can be measured on it");
}

TEST_F(MeasureFake, WatchdogGivesUpOnAWarmUpRun) {
  measure::Options o = quick(/*warmup=*/2);
  o.timeoutMs = 20;
  Expected<measure::Measurement> m =
      measureOn(measureJson(), "relu_hang_f32", 1.0f, o);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->timedOut);
  EXPECT_TRUE(contains(m->errors, "warm-up run 1 of 2 did not finish within "
                                  "20 ms"));
}

TEST_F(MeasureFake, WaitForStream) {
  const KernelSpec &slow = kernel(measureJson(), "relu_slow_f32");
  std::vector<DevicePtr> p = allocateFor(slow.params, 1.0f);
  ASSERT_TRUE(ctx->launchKernel(measureJson(), slow, p, stream).ok());
  Expected<bool> done = measure::waitForStream(*ctx, stream, 5000);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_TRUE(*done);
  const KernelSpec &hang = kernel(measureJson(), "relu_hang_f32");
  ASSERT_TRUE(ctx->launchKernel(measureJson(), hang, p, stream).ok());
  auto start = std::chrono::steady_clock::now();
  Expected<bool> gaveUp = measure::waitForStream(*ctx, stream, 30);
  ASSERT_TRUE(gaveUp.ok()) << gaveUp.error();
  EXPECT_FALSE(*gaveUp);
  EXPECT_GE(msSince(start), 30.0);
  EXPECT_LT(msSince(start), 3000.0);
}

TEST_F(MeasureFake, Function) {
  // tma.json's forward: a TMA matmul, then a split-K TMA matmul with a
  // workspace buffer; two sets, every run audited.
  const FunctionSpec &f = tmaJson().functions.at(0);
  size_t launches = hooks->launchCount();
  Expected<measure::Measurement> m =
      measurer->measureFunction(tmaJson(), f, allocateFor(f.args, 1.0f),
                                auditEveryRun(1, 4, 2), expectEvery(48.0f));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->valid()) << m->errors.front();
  EXPECT_EQ(m->runs, 4);
  EXPECT_EQ(hooks->launchCount() - launches, 2u * 5); // 2 kernels, 5 runs
  ASSERT_EQ(m->audits.size(), 4u);

  // measure.json's forward: relu_slow_f32 (2 ms) into a buffer, then
  // relu_drift_f32 from it: right for 3 runs, then wrong.
  const FunctionSpec &g = measureJson().functions.at(0);
  Expected<measure::Measurement> r =
      measurer->measureFunction(measureJson(), g, allocateFor(g.args, 1.0f),
                                auditEveryRun(0, 4, 1), expectEvery(1.0f));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_GE(r->stats.medianMs, 1.99);
  ASSERT_EQ(r->audits.size(), 4u);
  EXPECT_TRUE(r->audits[2].passed);
  EXPECT_FALSE(r->audits[3].passed);
  EXPECT_TRUE(contains(r->errors, "function 'forward': timed run 4 of 4: "
                                  "audit failed: 'out0'[0] is 1.500000"));
}

TEST_F(MeasureFake, BadArguments) {
  const KernelSpec &k = kernel(measureJson(), "relu_slow_f32");
  std::vector<DevicePtr> p = allocateFor(k.params, 1.0f);
  Expected<measure::Measurement> few =
      measurer->measureKernel(measureJson(), k, {p[0]}, quick());
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error(),
            "kernel 'relu_slow_f32': 2 tensors, but 1 device pointers");
  Expected<measure::Measurement> null =
      measurer->measureKernel(measureJson(), k, {p[0], 0}, quick());
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.error(),
            "kernel 'relu_slow_f32': the pointer of 'result' is null");
  measure::Options bad = quick();
  bad.runs = 0;
  Expected<measure::Measurement> opts =
      measurer->measureKernel(measureJson(), k, p, bad);
  ASSERT_FALSE(opts.ok());
  EXPECT_EQ(opts.error(),
            "kernel 'relu_slow_f32': runs must be at least 1, got 0");
  // A function's argument errors are launchFunction's.
  const FunctionSpec &f = measureJson().functions.at(0);
  std::vector<DevicePtr> args = allocateFor(f.args, 1.0f);
  args[0] += 4; // misaligned
  Expected<measure::Measurement> misaligned =
      measurer->measureFunction(measureJson(), f, args, quick());
  ASSERT_FALSE(misaligned.ok());
  EXPECT_NE(misaligned.error().find("function 'forward': buffer set 0: "
                                    "function 'forward': argument 0 ('arg0'): "
                                    "the address "),
            std::string::npos)
      << misaligned.error();
  EXPECT_NE(misaligned.error().find("is not 16-byte aligned"),
            std::string::npos);
}

} // namespace
