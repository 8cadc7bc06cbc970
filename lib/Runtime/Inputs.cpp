//===- Inputs.cpp - Random kernel inputs ----------------------------------===//

#include "kopt/Runtime/Inputs.h"
#include "kopt/Runtime/Float16.h"
#include "kopt/Runtime/Parallel.h"

#include <algorithm>
#include <cstdio>

namespace kopt::rt {

namespace {
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hashString(uint64_t h, std::string_view s) {
  // FNV-1a, then a splitmix64 finalisation.
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return splitmix64(h);
}

constexpr int64_t kChunk = 1 << 16;
} // namespace

std::string InputDistribution::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%suniform(%g, %g)", randomSign ? "+-" : "",
                low, high);
  return buf;
}

InputDistribution inputDistribution(const KernelSpec &kernel,
                                    const TensorSpec &param) {
  InputDistribution d;
  // By the ops that read the parameter directly (the first such op decides).
  for (const OpSpec &op : kernel.ops) {
    const std::string *input = op.operand("input");
    const std::string *rhs = op.operand("rhs");
    if ((op.kind == OpKind::Sqrt || op.kind == OpKind::Rsqrt ||
         op.kind == OpKind::Log) &&
        input && *input == param.name) {
      d.low = 0.1;
      d.high = 4.0;
      return d;
    }
    if (op.kind == OpKind::Log1p && input && *input == param.name) {
      d.low = -0.5;
      d.high = 1.0;
      return d;
    }
    if (op.kind == OpKind::Div && rhs && *rhs == param.name) {
      d.low = 0.5;
      d.high = 2.0;
      d.randomSign = true;
      return d;
    }
  }
  return d;
}

uint64_t deriveSeed(uint64_t seed, std::string_view kernelName,
                    std::string_view paramName) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  h = hashString(h, kernelName);
  h = hashString(h, "/");
  return hashString(h, paramName);
}

HostInput generateInput(const TensorSpec &param,
                        const InputDistribution &distribution, uint64_t seed) {
  int64_t n = param.numElements();
  HostInput in;
  in.bytes.resize(static_cast<size_t>(param.numBytes()));
  in.values.shape = param.shape;
  in.values.data.resize(n);
  int64_t chunks = (n + kChunk - 1) / kChunk;
  double span = distribution.high - distribution.low;
  parallelFor(chunks, 1, [&](int64_t cBegin, int64_t cEnd) {
    for (int64_t c = cBegin; c < cEnd; ++c) {
      uint64_t state = seed ^ (0xd1b54a32d192ed03ull * uint64_t(c + 1));
      splitmix64(state);
      int64_t end = std::min(n, (c + 1) * kChunk);
      for (int64_t i = c * kChunk; i < end; ++i) {
        uint64_t bits = splitmix64(state);
        double u = double(bits >> 11) * 0x1.0p-53; // [0, 1)
        double v = distribution.low + span * u;
        if (distribution.randomSign && (bits & 1))
          v = -v;
        encodeElement(param.dtype, static_cast<float>(v), in.bytes.data(), i);
        in.values.data[i] = decodeElement(param.dtype, in.bytes.data(), i);
      }
    }
  });
  return in;
}

} // namespace kopt::rt
