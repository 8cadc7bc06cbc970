//===- Internal.h - Helpers shared by the manifest library's files -------===//

#ifndef KOPT_LIB_MANIFEST_INTERNAL_H
#define KOPT_LIB_MANIFEST_INTERNAL_H

#include "kopt/Manifest/Manifest.h"

#include <array>
#include <string>
#include <vector>

namespace kopt::manifest::detail {

/// A failure "<where>: <message>".
inline Status fail(const std::string &where, const std::string &message) {
  return Status::error(where + ": " + message);
}

/// "a, b, result".
inline std::string joinNames(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      s += ", ";
    s += names[i];
  }
  return s;
}

/// The message for a swizzle that is not 0, 32, 64 or 128.
inline std::string badSwizzle(int64_t swizzle) {
  return std::to_string(swizzle) +
         " is not a swizzle span (expected 0, 32, 64 or 128 bytes)";
}

/// "'a' [64, 128]".
inline std::string describe(const TensorSpec &t) {
  return "'" + t.name + "' " + shapeToString(t.shape);
}

/// Launch limits (CUDA C++ Programming Guide, "Technical Specifications"):
/// grid x, y, z and block x, y, z.
inline constexpr std::array<int64_t, 3> kGridLimits{(int64_t(1) << 31) - 1,
                                                    65535, 65535};
inline constexpr std::array<int64_t, 3> kBlockLimits{1024, 1024, 64};
/// Blocks per cluster along x, y, z; at most 8 in all (the portable size:
/// CUDA C++ Programming Guide, "Thread Block Clusters").
inline constexpr std::array<int64_t, 3> kClusterLimits{8, 8, 8};
inline constexpr int64_t kMaxClusterBlocks = 8;

/// A launch dimension `value` out of [1, limit] at `at`.
inline Status checkDim(const std::string &at, int64_t value, int64_t limit) {
  if (value >= 1 && value <= limit)
    return Status::success();
  return fail(at, "value " + std::to_string(value) + " out of range [1, " +
                      std::to_string(limit) + "]");
}

} // namespace kopt::manifest::detail

#endif // KOPT_LIB_MANIFEST_INTERNAL_H
