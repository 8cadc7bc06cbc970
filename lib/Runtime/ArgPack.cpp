//===- ArgPack.cpp - Kernel argument arrays for cuLaunchKernel ------------===//

#include "kopt/Runtime/ArgPack.h"

#include <utility>

namespace kopt::rt {

Expected<ArgPack> ArgPack::create(const KernelSpec &kernel,
                                  const std::vector<uint64_t> &pointers) {
  if (pointers.size() != kernel.params.size())
    return Status::error("kernel '" + kernel.name + "' takes " +
                         std::to_string(kernel.params.size()) +
                         " parameters, got " + std::to_string(pointers.size()) +
                         " pointers");
  for (size_t i = 0; i < pointers.size(); ++i)
    if (pointers[i] == 0)
      return Status::error("kernel '" + kernel.name + "': parameter " +
                           std::to_string(i) + " ('" + kernel.params[i].name +
                           "') is a null pointer");
  ArgPack pack;
  pack.values = pointers;
  pack.slots.reserve(pack.values.size());
  for (uint64_t &v : pack.values)
    pack.slots.push_back(&v);
  return std::move(pack);
}

} // namespace kopt::rt
