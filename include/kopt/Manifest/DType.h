//===- DType.h - The element types kopt compiles ----------------*- C++ -*-===//
//
// The one definition of kopt's element types, shared by the manifest library,
// the runtime and the schedules (kopt::schedule::DType is this type). Header
// only and free of MLIR, so that any part of kopt can use it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_MANIFEST_DTYPE_H
#define KOPT_MANIFEST_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace kopt::manifest {

/// Element types of kernel parameters and of the values between ops.
enum class DType { F32, F16, BF16 };

/// "f32", "f16" or "bf16".
inline const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

/// Parses "f32", "f16" or "bf16"; nullopt for anything else.
inline std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::F32, DType::F16, DType::BF16})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

/// Bytes per element: 4 for f32, 2 for f16 and bf16.
inline int64_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

} // namespace kopt::manifest

#endif // KOPT_MANIFEST_DTYPE_H
