//===- ArgPack.h - Kernel argument arrays for cuLaunchKernel ----*- C++ -*-===//
//
// Builds the `void **kernelParams` array that cuLaunchKernel takes, from a
// kernel's parameter list (docs/manifest.md: every parameter is one `.u64`
// device pointer, and each tensor map one more `.u64` after them) and the
// device pointers to pass. Pure C++: no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_ARGPACK_H
#define KOPT_RUNTIME_ARGPACK_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Error.h"

#include <cstdint>
#include <vector>

namespace kopt::rt {

/// Owns the parameter values and the array of pointers to them. The array
/// returned by data() stays valid as long as the ArgPack lives (also after it
/// is moved: the storage moves with it). Not copyable.
class ArgPack {
public:
  /// Packs `pointers[i]` as the kernel's i-th parameter and, after them,
  /// `tensorMaps[j]` (the device address of the CUtensorMap of
  /// `kernel.tensorMaps[j]`; see TensorMaps in Runtime.h). Fails (naming the
  /// kernel) when a count differs from the kernel's or a pointer is null.
  static Expected<ArgPack> create(const KernelSpec &kernel,
                                  const std::vector<uint64_t> &pointers,
                                  const std::vector<uint64_t> &tensorMaps = {});

  ArgPack(ArgPack &&) = default;
  ArgPack &operator=(ArgPack &&) = default;
  ArgPack(const ArgPack &) = delete;
  ArgPack &operator=(const ArgPack &) = delete;

  /// The array to pass as cuLaunchKernel's `kernelParams`: entry i points at
  /// the 8-byte value of parameter i (the tensor maps' after the params).
  void **data() { return slots.data(); }
  size_t size() const { return slots.size(); }
  /// The value of parameter i.
  uint64_t value(size_t i) const { return values[i]; }

private:
  ArgPack() = default;
  std::vector<uint64_t> values;
  std::vector<void *> slots;
};

} // namespace kopt::rt

#endif // KOPT_RUNTIME_ARGPACK_H
