//===- FakeTensorMap.cpp - The fake driver's cuTensorMapEncodeTiled -------===//
//
// Checks the arguments against the driver's rules for the tiled maps kopt
// makes, records every call and writes the fake's readable encoding into the
// map (FakeCudaHooks.h); part of test/unit/FakeCuda's libcuda.so.1.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaHooks.h"
#include "FakeCudaState.h"

#include <algorithm>
#include <cstring>
#include <vector>

using kopt::fake::valid;

namespace {
std::vector<KoptFakeEncodeCall> encodeCalls;

/// Bytes per element of a tensor-map data type; 0 for the packed ones.
uint64_t tensorMapElementBytes(CUtensorMapDataType t) {
  switch (t) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

/// The rules of cuTensorMapEncodeTiled (cuda.h) for the tiled,
/// non-interleaved maps kopt makes, plus the fake's own: the tensor lies
/// inside one allocation.
bool validEncode(const KoptFakeEncodeCall &c) {
  if (!c.tensorMap || c.tensorMap % 64 != 0 || c.rank < 1 || c.rank > 5)
    return false;
  uint64_t esize =
      tensorMapElementBytes(static_cast<CUtensorMapDataType>(c.dataType));
  if (esize == 0 || !c.globalAddress || c.globalAddress % 16 != 0 ||
      c.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || c.l2Promotion < 0 ||
      c.l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || c.oobFill < 0 ||
      c.oobFill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return false;
  uint64_t span = 0;
  switch (c.swizzle) {
  case CU_TENSOR_MAP_SWIZZLE_NONE:
    break;
  case CU_TENSOR_MAP_SWIZZLE_32B:
    span = 32;
    break;
  case CU_TENSOR_MAP_SWIZZLE_64B:
    span = 64;
    break;
  case CU_TENSOR_MAP_SWIZZLE_128B:
    span = 128;
    break;
  default:
    return false;
  }
  if (c.boxDim[0] * esize % 16 != 0 || (span && c.boxDim[0] * esize > span))
    return false;
  uint64_t last = esize; // one past the last byte, from globalAddress
  for (uint32_t i = 0; i < c.rank; ++i) {
    if (c.globalDim[i] < 1 || c.globalDim[i] > (uint64_t(1) << 32) ||
        c.boxDim[i] < 1 || c.boxDim[i] > 256 || c.elementStrides[i] < 1 ||
        c.elementStrides[i] > 8)
      return false;
    uint64_t stride = i == 0 ? esize : c.globalStrides[i - 1];
    if (i > 0 && (stride % 16 != 0 || stride >= (uint64_t(1) << 40)))
      return false;
    last += (c.globalDim[i] - 1) * stride;
  }
  return valid(c.globalAddress, last);
}
} // namespace

extern "C" {

CUresult cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType dataType, cuuint32_t rank,
    void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  KoptFakeEncodeCall c;
  c.tensorMap = reinterpret_cast<uint64_t>(tensorMap);
  c.dataType = dataType;
  c.rank = rank;
  c.globalAddress = reinterpret_cast<uint64_t>(globalAddress);
  for (uint32_t i = 0; i < std::min<uint32_t>(rank, 5); ++i) {
    c.globalDim[i] = globalDim ? globalDim[i] : 0;
    c.boxDim[i] = boxDim ? boxDim[i] : 0;
    c.elementStrides[i] = elementStrides ? elementStrides[i] : 0;
    if (i + 1 < rank)
      c.globalStrides[i] = globalStrides ? globalStrides[i] : 0;
  }
  c.interleave = interleave;
  c.swizzle = swizzle;
  c.l2Promotion = l2Promotion;
  c.oobFill = oobFill;
  bool ok = globalDim && boxDim && elementStrides &&
            (rank < 2 || globalStrides) && validEncode(c);
  c.result = ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  encodeCalls.push_back(c);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  KoptFakeTensorMap m{};
  m.magic = kKoptFakeTensorMapMagic;
  m.globalAddress = c.globalAddress;
  for (uint32_t i = 0; i < rank; ++i) {
    m.globalDim[i] = c.globalDim[i];
    m.boxDim[i] = c.boxDim[i];
    m.elementStrides[i] = static_cast<uint8_t>(c.elementStrides[i]);
    if (i + 1 < rank)
      m.globalStrides[i] = c.globalStrides[i];
  }
  m.dataType = static_cast<uint8_t>(dataType);
  m.rank = static_cast<uint8_t>(rank);
  m.interleave = static_cast<uint8_t>(interleave);
  m.swizzle = static_cast<uint8_t>(swizzle);
  m.l2Promotion = static_cast<uint8_t>(l2Promotion);
  m.oobFill = static_cast<uint8_t>(oobFill);
  std::memset(tensorMap, 0, sizeof(CUtensorMap));
  std::memcpy(tensorMap, &m, sizeof(m));
  return CUDA_SUCCESS;
}

// Recording, for tests (FakeCudaHooks.h).
size_t koptFakeTensorMapEncodeCount() { return encodeCalls.size(); }

bool koptFakeTensorMapEncodeCall(size_t index, KoptFakeEncodeCall *out) {
  if (index >= encodeCalls.size() || !out)
    return false;
  *out = encodeCalls[index];
  return true;
}

} // extern "C"
