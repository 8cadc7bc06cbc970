//===- FakeCublas.cpp - A host-only stand-in for libcublas.so.13 ----------===//
//
// For the unit tests (see FakeCuda.cpp): a plain column-major GEMM written
// from the BLAS definition, C = alpha op(A) op(B) + beta C with
// A(i, l) = A[i + l * lda], so that kopt's row-major operand swapping and
// transpose flags are checked against the definition rather than against
// themselves.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Float16.h"

#include <cublas_api.h>

struct cublasContext {
  int dummy;
};

namespace {
float load(const void *p, cudaDataType type, long i) {
  switch (type) {
  case CUDA_R_32F:
    return static_cast<const float *>(p)[i];
  case CUDA_R_16F:
    return kopt::rt::f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case CUDA_R_16BF:
    return kopt::rt::bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  default:
    return 0.0f;
  }
}
} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "success" : "fake cuBLAS error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t) {
  if (Ctype != CUDA_R_32F || computeType != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // Leading dimensions must cover the stored rows (column-major).
  int rowsA = transa == CUBLAS_OP_N ? m : k;
  int rowsB = transb == CUBLAS_OP_N ? k : n;
  if (lda < rowsA || ldb < rowsB || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  float a = *static_cast<const float *>(alpha);
  float b = *static_cast<const float *>(beta);
  float *c = static_cast<float *>(C);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int l = 0; l < k; ++l) {
        long ia = transa == CUBLAS_OP_N ? i + long(l) * lda : l + long(i) * lda;
        long ib = transb == CUBLAS_OP_N ? l + long(j) * ldb : j + long(l) * ldb;
        acc += double(load(A, Atype, ia)) * load(B, Btype, ib);
      }
      float &out = c[i + long(j) * ldc];
      out = float(a * acc + (b == 0.0f ? 0.0 : b * out));
    }
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
