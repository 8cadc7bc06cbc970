//===- Workspace.h - Where a function's intermediate buffers live -*- C++
//-*-===//
//
// A framework launches a kopt function on memory it owns: the function's
// intermediate buffers (manifest `functions[].buffers`) are carved out of one
// workspace region that the caller allocates (docs/capi.md). This is the one
// layout every launcher uses (CudaContext::launchFunction, the C API, the
// Python package). Pure C++: no CUDA, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_WORKSPACE_H
#define KOPT_RUNTIME_WORKSPACE_H

#include "kopt/Runtime/Error.h"
#include "kopt/Manifest/Manifest.h"

#include <cstdint>
#include <vector>

namespace kopt::rt {

/// Alignment of the workspace region and of every buffer in it, bytes: what
/// cuMemAlloc guarantees, so kernels see the alignment they would see on
/// buffers of their own.
inline constexpr int64_t kWorkspaceAlignment = 256;

struct WorkspaceLayout {
  /// Byte offset of each of `function.buffers`, in the same order; each a
  /// multiple of kWorkspaceAlignment.
  std::vector<int64_t> offsets;
  /// Bytes the region must have (0 when the function has no buffers).
  int64_t bytes = 0;
};

/// Lays the buffers of `function` out one after the other, each rounded up
/// to kWorkspaceAlignment. Fails, naming the function, when the total does
/// not fit in int64_t.
Expected<WorkspaceLayout> workspaceLayout(const FunctionSpec &function);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_WORKSPACE_H
