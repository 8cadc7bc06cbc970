//===- FakeCudaState.h - What the parts of the fake driver share -*- C++
//-*-===//
//
// Internal to test/unit/FakeCuda's libcuda.so.1 (FakeCuda.cpp: devices,
// memory, streams, events, modules and launches; FakeKernels.cpp: the fake
// kernels; FakeTensorMap.cpp: cuTensorMapEncodeTiled): the allocation bounds
// check, the launch being run and the table of kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_FAKECUDA_FAKECUDASTATE_H
#define KOPT_TEST_FAKECUDA_FAKECUDASTATE_H

#include <cuda.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace kopt::fake {

/// Is [ptr, ptr + bytes) inside one allocation?
bool valid(CUdeviceptr ptr, size_t bytes);

/// The launch count of the kernel being run (0 for its first launch).
extern long currentLaunchIndex;

// Typed views of the launch arguments: args[i] points at a CUdeviceptr.
template <typename T> T *arg(void **args, int i) {
  return reinterpret_cast<T *>(*static_cast<CUdeviceptr *>(args[i]));
}

struct FakeKernel {
  std::vector<size_t> paramBytes; // checked against the allocations
  void (*run)(void **args);
  /// Tensor-map parameters after the data parameters: each must be a
  /// 64-byte aligned device CUtensorMap holding an encoding.
  size_t tensorMaps = 0;
  /// The parameter count cuFuncGetParamInfo reports when not -1 (else the
  /// data parameters and the maps): a PTX entry that disagrees with its
  /// manifest, which the runtime must refuse before launching.
  long ptxParams = -1;
  /// Modeled device time of one launch, ms (0: none; see the file header),
  /// from the launch with this index (per loaded module) on.
  double deviceMs = 0;
  long slowFrom = 0;

  size_t reportedParams() const {
    return ptxParams >= 0 ? static_cast<size_t>(ptxParams)
                          : paramBytes.size() + tensorMaps;
  }
};

/// The fake kernels by PTX entry name (FakeKernels.cpp).
const std::map<std::string, FakeKernel> &kernels();

} // namespace kopt::fake

#endif // KOPT_TEST_FAKECUDA_FAKECUDASTATE_H
