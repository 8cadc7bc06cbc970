//===- Inputs.h - Random kernel inputs --------------------------*- C++ -*-===//
//
// Fresh random inputs for checking and timing kernels. Values are drawn on
// the host from a counter-based generator (splitmix64 over fixed chunks of
// 65536 elements), so the same seed gives the same tensor whatever the
// thread count. Each value is drawn as a double, rounded to float, then to
// the parameter's dtype (round to nearest even); the references read the
// rounded values back, i.e. exactly what the GPU sees.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_INPUTS_H
#define KOPT_RUNTIME_INPUTS_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Error.h"
#include "kopt/Runtime/Reference.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::rt {

/// Values uniform in [low, high); with `randomSign`, each value's sign is
/// flipped with probability 1/2.
struct InputDistribution {
  double low = -1.0;
  double high = 1.0;
  bool randomSign = false;

  /// "uniform(-1, 1)", "+-uniform(0.5, 2)".
  std::string describe() const;
};

/// The distribution for input parameter `param` of `kernel`: uniform(-1, 1)
/// by default; uniform(0.1, 4) when an op of the kernel's graph reads it as
/// the input of sqrt, rsqrt or log; uniform(-0.5, 1) as the input of log1p;
/// magnitude uniform in [0.5, 2) with a random sign when one reads it as the
/// rhs of div.
InputDistribution inputDistribution(const KernelSpec &kernel,
                                    const TensorSpec &param);

/// A seed for one tensor, mixed from the run's seed and names (so that
/// `--kernel K --seed S` reproduces the inputs of a full run with seed S).
uint64_t deriveSeed(uint64_t seed, std::string_view kernelName,
                    std::string_view paramName);

/// A random host tensor: the raw bytes to copy to the device and the same
/// values decoded to double.
struct HostInput {
  std::vector<uint8_t> bytes;
  HostTensor values;
};

/// Draws `param.numElements()` values of `param.dtype` with shape
/// `param.shape`.
HostInput generateInput(const TensorSpec &param,
                        const InputDistribution &distribution, uint64_t seed);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_INPUTS_H
