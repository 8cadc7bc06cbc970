//===- Workspace.cpp - The layout of a function's workspace ---------------===//

#include "kopt/Runtime/Workspace.h"

#include <limits>
#include <string>

namespace kopt::rt {

Expected<WorkspaceLayout> workspaceLayout(const FunctionSpec &function) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  WorkspaceLayout layout;
  layout.offsets.reserve(function.buffers.size());
  for (const BufferSpec &buffer : function.buffers) {
    int64_t bytes = numBytes(buffer.shape, buffer.dtype);
    if (bytes > kMax - kWorkspaceAlignment ||
        layout.bytes > kMax - kWorkspaceAlignment - bytes)
      return Status::error("function '" + function.name +
                           "': its intermediate buffers need more than 2^63 "
                           "bytes of workspace");
    layout.offsets.push_back(layout.bytes);
    int64_t rounded = (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
                      kWorkspaceAlignment;
    layout.bytes += rounded;
  }
  return layout;
}

} // namespace kopt::rt
