//===- Stats.cpp - Statistics, output scans and option checks -------------===//
//
// The pure parts of the measurement library (include/kopt/Measure/Measure.h):
// no CUDA calls.
//
//===----------------------------------------------------------------------===//

#include "kopt/Measure/Measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kopt::measure {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// Whether `bits` (an element of `dtype`, widened) is NaN or Inf: the
/// exponent field is all ones.
bool nonFiniteBits(uint32_t bits, rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return (bits & 0x7f800000u) == 0x7f800000u;
  case rt::DType::F16:
    return (bits & 0x7c00u) == 0x7c00u;
  case rt::DType::BF16:
    return (bits & 0x7f80u) == 0x7f80u;
  }
  return false;
}

} // namespace

Status validateOptions(const Options &o) {
  auto bad = [](const std::string &what) { return Status::error(what); };
  if (o.warmup < 0)
    return bad("warmup must not be negative, got " + std::to_string(o.warmup));
  if (o.runs < 1)
    return bad("runs must be at least 1, got " + std::to_string(o.runs));
  if (o.minRuns < 1 || o.minRuns > o.runs)
    return bad("minRuns must be in [1, runs = " + std::to_string(o.runs) +
               "], got " + std::to_string(o.minRuns));
  if (!(o.timeBudgetMs >= 0) || !std::isfinite(o.timeBudgetMs))
    return bad("timeBudgetMs must be a finite number >= 0, got " +
               number(o.timeBudgetMs));
  if (o.l2FlushBytes < 0)
    return bad("l2FlushBytes must not be negative, got " +
               std::to_string(o.l2FlushBytes));
  if (o.inputSets < 1)
    return bad("inputSets must be at least 1, got " +
               std::to_string(o.inputSets));
  if (o.auditRuns < 0)
    return bad("auditRuns must not be negative, got " +
               std::to_string(o.auditRuns));
  if (!(o.timeoutMs >= 0) || !std::isfinite(o.timeoutMs))
    return bad("timeoutMs must be a finite number >= 0, got " +
               number(o.timeoutMs));
  return Status::success();
}

double quantile(const std::vector<double> &sorted, double q) {
  double point = q * double(sorted.size() - 1);
  size_t lower = static_cast<size_t>(std::floor(point));
  size_t upper = std::min(lower + 1, sorted.size() - 1);
  double t = point - double(lower);
  return sorted[lower] + t * (sorted[upper] - sorted[lower]);
}

Stats summarize(std::vector<double> ms) {
  Stats s;
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.minMs = ms.front();
  s.maxMs = ms.back();
  s.medianMs = quantile(ms, 0.5);
  s.p10Ms = quantile(ms, 0.1);
  s.p90Ms = quantile(ms, 0.9);
  double sum = 0;
  for (double v : ms)
    sum += v;
  s.meanMs = sum / double(n);
  if (n > 1) {
    double squares = 0;
    for (double v : ms)
      squares += (v - s.meanMs) * (v - s.meanMs);
    s.stddevMs = std::sqrt(squares / double(n - 1));
  }
  return s;
}

OutputScan scanOutput(const void *data, rt::DType dtype, int64_t elements) {
  OutputScan scan;
  const auto *bytes = static_cast<const uint8_t *>(data);
  int64_t size = rt::dtypeSize(dtype);
  for (int64_t i = 0; i < elements; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, bytes + i * size, static_cast<size_t>(size));
    uint32_t poison = size == 4 ? 0xffffffffu : 0xffffu;
    if (bits == poison) {
      if (scan.unwritten++ == 0)
        scan.firstUnwritten = i;
    } else if (nonFiniteBits(bits, dtype)) {
      if (scan.nonFinite++ == 0)
        scan.firstNonFinite = i;
    }
  }
  return scan;
}

bool Measurement::auditPassed() const {
  return std::all_of(audits.begin(), audits.end(),
                     [](const AuditRecord &a) { return a.passed; });
}

} // namespace kopt::measure
