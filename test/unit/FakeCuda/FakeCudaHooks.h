//===- FakeCudaHooks.h - What the fake libcuda.so.1 records -----*- C++ -*-===//
//
// Shared by FakeCuda.cpp and the tests that run the runtime against it. The
// fake's cuTensorMapEncodeTiled records every call (KoptFakeEncodeCall) and
// writes a readable encoding (KoptFakeTensorMap) into the 128-byte map, which
// the fake TMA kernels read back. Tests reach the recording functions with
// dlopen("libcuda.so.1", RTLD_NOLOAD) and dlsym once the runtime has loaded
// the fake driver. No cuda.h needed.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_FAKECUDA_HOOKS_H
#define KOPT_TEST_FAKECUDA_HOOKS_H

#include <cstddef>
#include <cstdint>
#include <cstring>

/// The arguments of one cuTensorMapEncodeTiled call (arrays: `rank` entries,
/// `rank - 1` for the strides) and what it returned.
struct KoptFakeEncodeCall {
  uint64_t tensorMap = 0; // the host CUtensorMap * it wrote
  int dataType = -1;      // CUtensorMapDataType
  uint32_t rank = 0;
  uint64_t globalAddress = 0;
  uint64_t globalDim[5] = {};
  uint64_t globalStrides[4] = {};
  uint32_t boxDim[5] = {};
  uint32_t elementStrides[5] = {};
  int interleave = -1;
  int swizzle = -1;
  int l2Promotion = -1;
  int oobFill = -1;
  int result = -1; // CUresult
};

/// The fake's content of a CUtensorMap (the real one is opaque).
struct KoptFakeTensorMap {
  uint64_t magic;
  uint64_t globalAddress;
  uint64_t globalDim[5];
  uint64_t globalStrides[4];
  uint32_t boxDim[5];
  uint8_t elementStrides[5];
  uint8_t dataType, rank, interleave, swizzle, l2Promotion, oobFill;
};
static_assert(sizeof(KoptFakeTensorMap) <= 128, "a CUtensorMap is 128 bytes");

inline constexpr uint64_t kKoptFakeTensorMapMagic = 0x50414d54544f504bull;

/// Reads the fake encoding of the 128 bytes at `map`; false when they do not
/// hold one.
inline bool koptFakeDecodeTensorMap(const void *map, KoptFakeTensorMap &out) {
  std::memcpy(&out, map, sizeof(out));
  return out.magic == kKoptFakeTensorMapMagic;
}

extern "C" {
/// Functions the fake libcuda.so.1 exports for tests.
using KoptFakeEncodeCountFn = size_t (*)();
/// Copies call `index` (0 = the first since the library was loaded) to
/// `out`; false when there is no such call.
using KoptFakeEncodeCallFn = bool (*)(size_t index, KoptFakeEncodeCall *out);
/// cuMemcpyHtoD calls so far.
using KoptFakeMemcpyHtoDCountFn = size_t (*)();
/// The `.u64` parameter values of the last cuLaunchKernel (data parameters,
/// then tensor maps): copies up to `max` to `values`, returns how many.
using KoptFakeLastLaunchFn = size_t (*)(uint64_t *values, size_t max);
/// Successful cuLaunchKernel calls so far.
using KoptFakeLaunchCountFn = size_t (*)();
/// The `.u64` parameter values of launch `index` (0 = the first since the
/// library was loaded), as KoptFakeLastLaunchFn gives them; 0 when there is
/// no such launch.
using KoptFakeLaunchParamsFn = size_t (*)(size_t index, uint64_t *values,
                                          size_t max);
}

#endif // KOPT_TEST_FAKECUDA_HOOKS_H
