//===- ArgPack.cpp - Kernel argument arrays for cuLaunchKernel ------------===//

#include "kopt/Runtime/ArgPack.h"

#include <utility>

namespace kopt::rt {

Expected<ArgPack> ArgPack::create(const KernelSpec &kernel,
                                  const std::vector<uint64_t> &pointers,
                                  const std::vector<uint64_t> &tensorMaps) {
  if (pointers.size() != kernel.params.size())
    return Status::error("kernel '" + kernel.name + "' takes " +
                         std::to_string(kernel.params.size()) +
                         " parameters, got " + std::to_string(pointers.size()) +
                         " pointers");
  if (tensorMaps.size() != kernel.tensorMaps.size())
    return Status::error("kernel '" + kernel.name + "' has " +
                         std::to_string(kernel.tensorMaps.size()) +
                         " tensor maps, got " +
                         std::to_string(tensorMaps.size()) + " map addresses");
  for (size_t i = 0; i < pointers.size(); ++i)
    if (pointers[i] == 0)
      return Status::error("kernel '" + kernel.name + "': parameter " +
                           std::to_string(i) + " ('" + kernel.params[i].name +
                           "') is a null pointer");
  for (size_t i = 0; i < tensorMaps.size(); ++i)
    if (tensorMaps[i] == 0)
      return Status::error(
          "kernel '" + kernel.name + "': tensor map " + std::to_string(i) +
          " ('" + kernel.tensorMaps[i].tensor + "') is a null pointer");
  ArgPack pack;
  pack.values = pointers;
  pack.values.insert(pack.values.end(), tensorMaps.begin(), tensorMaps.end());
  pack.slots.reserve(pack.values.size());
  for (uint64_t &v : pack.values)
    pack.slots.push_back(&v);
  return std::move(pack);
}

} // namespace kopt::rt
