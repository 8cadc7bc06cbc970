//===- ModelMeasurer.cpp - An analytical estimate of a matmul's time ------===//
//
// For machines without a GPU: a roofline of each wave of block tiles. Every
// figure it gives is an estimate (measurer "model"), never a measurement.
//
//   blocks/SM   = min(228 KiB / (shared + 1 KiB), 2048 / threads), at least 1
//                 (sm_90's limits, CUDA C++ Programming Guide, "Technical
//                 Specifications per Compute Capability")
//   tiles       = ceil(M / block_m) ceil(N / block_n) split_k
//   waves       = ceil(tiles / (SMs x blocks/SM))
//   compute     = waves x blocks/SM x 2 block_m block_n K_slice / (peak / SMs)
//                 / efficiency, K_slice = ceil(K / split_k) rounded up to
//                 block_k (padded tiles compute in full)
//   traffic     = A ceil(N / block_n) + B ceil(M / block_m) operand bytes
//                 (each tile reads its panels), divided by the L2 reuse (2, or
//                 4 with grouped rasterization), at least A + B; plus C, and
//                 with split-K the f32 partials written and read again
//   time        = max(compute, traffic / bandwidth) + 3 us (launch)
// Peaks (NVIDIA H200 SXM datasheet, dense): 989 TFLOP/s bf16/f16 wgmma,
// 494.5 TF32, 67 f32 FMA; mma.sync taken at 60% of wgmma's rate; HBM3e 4.8
// TB/s. Efficiency: 1.0 with 3 or more stages, 0.8 with 2, 0.5 with one or
// synchronous copies; 0.7 for mma.sync warp tiles under 64 x 64.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Measurer.h"

#include <algorithm>
#include <cmath>

namespace kopt::search {

namespace sched = kopt::schedule;

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// NVIDIA H200 SXM datasheet, dense.
constexpr double kTensorPeak = 989e12, kTF32Peak = 494.5e12, kFmaPeak = 67e12,
                 kBandwidth = 4.8e12;
} // namespace

double rooflinePeakFlops(const Task &task) {
  const sched::MatmulWorkload &w = task.workload;
  if (w.a != sched::DType::F32)
    return kTensorPeak;
  return w.tf32 ? kTF32Peak : kFmaPeak;
}

double rooflineBandwidth() { return kBandwidth; }

double rooflineFloorMs(const Task &task) {
  return std::max(double(task.flops) / rooflinePeakFlops(task),
                  double(task.bytes) / kBandwidth) *
         1e3;
}

double estimateMs(const Task &task, const sched::MatmulSchedule &s) {
  const sched::MatmulWorkload &w = task.workload;
  const double sms = double(task.target.multiprocessors);
  bool f32 = w.a == sched::DType::F32;
  double peak;
  switch (s.instruction) {
  case sched::Instruction::Wgmma:
    peak = f32 ? kTF32Peak : kTensorPeak;
    break;
  case sched::Instruction::MmaSync:
    peak = 0.6 * kTensorPeak;
    break;
  default:
    peak = kFmaPeak;
    break;
  }
  const double bandwidth = kBandwidth;
  int64_t shared = sched::sharedBytes(s, w);
  int64_t perSM = std::max<int64_t>(
      1, std::min<int64_t>((228 * 1024) / (shared + 1024),
                           2048 / std::max<int64_t>(32, s.threads())));
  int64_t tiles = ceilDiv(w.m, s.blockM) * ceilDiv(w.n, s.blockN) * s.splitK;
  int64_t waves = ceilDiv(tiles, int64_t(sms) * perSM);
  int64_t kSlice = ceilDiv(ceilDiv(w.k, s.splitK), s.blockK) * s.blockK;
  double efficiency = s.stages >= 3 ? 1.0 : s.stages == 2 ? 0.8 : 0.5;
  if (s.copy == sched::CopyEngine::Sync)
    efficiency = std::min(efficiency, 0.5);
  if (s.instruction == sched::Instruction::MmaSync &&
      s.warpM * s.warpN < 64 * 64)
    efficiency *= 0.7;
  double compute = double(waves) * double(std::min(perSM, tiles)) * 2.0 *
                   double(s.blockM) * double(s.blockN) * double(kSlice) /
                   (peak / sms) / efficiency;
  double aBytes = double(w.m) * w.k * sched::bytesOf(w.a);
  double bBytes = double(w.k) * w.n * sched::bytesOf(w.b);
  double cBytes = double(w.m) * w.n * sched::bytesOf(w.c);
  double reuse = s.swizzle > 1 ? 4.0 : 2.0;
  double operands = std::max(aBytes + bBytes,
                             (aBytes * ceilDiv(w.n, s.blockN) +
                              bBytes * ceilDiv(w.m, s.blockM)) /
                                 reuse);
  double traffic = operands + cBytes;
  if (s.splitK > 1)
    traffic += 2.0 * double(s.splitK) * w.m * w.n * 4.0;
  double seconds = std::max(compute, traffic / bandwidth) + 3e-6;
  return seconds * 1e3;
}

namespace {

class ModelMeasurer : public Measurer {
public:
  std::string name() const override { return "model"; }
  bool needsBuild() const override { return false; }
  Status measure(const Task &task, std::vector<Candidate *> &batch) override {
    for (Candidate *c : batch) {
      if (!c->record.status.empty())
        continue;
      double ms = estimateMs(task, c->schedule);
      TrialRecord &r = c->record;
      r.status = "ok";
      r.correct = true; // an estimate checks nothing; see measurer "model"
      r.medianMs = r.minMs = r.maxMs = r.meanMs = r.p10Ms = r.p90Ms = ms;
      r.stddevMs = 0;
      r.runs = 0;
      r.device = "estimate (H200 datasheet)";
      r.sharedBytes = sched::sharedBytes(c->schedule, task.workload);
    }
    return Status::success();
  }
};

} // namespace

std::unique_ptr<Measurer> makeModelMeasurer() {
  return std::make_unique<ModelMeasurer>();
}

} // namespace kopt::search
