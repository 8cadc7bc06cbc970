//===- Cublas.cpp - cuBLAS, opened with dlopen, for the matmul reference --===//
//
// See include/kopt/Runtime/Runtime.h. Only cuBLAS's types come from its
// header; the functions are resolved at run time.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Runtime.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#ifndef KOPT_CUDA_LIB_DIR
#define KOPT_CUDA_LIB_DIR ""
#endif

namespace kopt::rt {

namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t *);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using StatusStringFn = const char *(*)(cublasStatus_t);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                    cublasOperation_t, int, int, int,
                                    const void *, const void *, cudaDataType,
                                    int, const void *, cudaDataType, int,
                                    const void *, void *, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);

struct CublasApi {
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn setStream = nullptr;
  StatusStringFn statusString = nullptr;
  GemmExFn gemmEx = nullptr;
  std::string path;
};

CublasApi cublas;

Status openCublas() {
  std::vector<std::string> candidates = {"libcublas.so.13", "libcublas.so"};
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"))
    dirs.push_back(std::string(home) + "/lib64");
  if (*KOPT_CUDA_LIB_DIR)
    dirs.push_back(KOPT_CUDA_LIB_DIR);
  dirs.push_back("/usr/local/cuda/lib64");
  for (const std::string &dir : dirs) {
    candidates.push_back(dir + "/libcublas.so.13");
    candidates.push_back(dir + "/libcublas.so");
  }
  void *lib = nullptr;
  std::string tried, lastError;
  for (const std::string &name : candidates) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      cublas.path = name;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + name;
    if (const char *e = dlerror())
      lastError = e;
  }
  if (!lib)
    return Status::error("cuBLAS (the matmul reference) not found: tried " +
                         tried + " (last error: " + lastError +
                         "); add its folder to LD_LIBRARY_PATH, or skip the "
                         "check with --no-check");
  auto resolve = [&](const char *symbol, auto &fn) -> Status {
    void *p = dlsym(lib, symbol);
    if (!p)
      return Status::error(cublas.path + " has no function " + symbol);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    return Status::success();
  };
  KOPT_RETURN_IF_ERROR(resolve("cublasCreate_v2", cublas.create));
  KOPT_RETURN_IF_ERROR(resolve("cublasDestroy_v2", cublas.destroy));
  KOPT_RETURN_IF_ERROR(resolve("cublasSetStream_v2", cublas.setStream));
  KOPT_RETURN_IF_ERROR(resolve("cublasGemmEx", cublas.gemmEx));
  // Optional: only for nicer messages.
  cublas.statusString =
      reinterpret_cast<StatusStringFn>(dlsym(lib, "cublasGetStatusString"));
  return Status::success();
}

Status loadCublas() {
  static const Status status = openCublas();
  return status;
}

Status check(cublasStatus_t status, const std::string &what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  std::string message = what + ": cuBLAS status " + std::to_string(status);
  if (cublas.statusString)
    if (const char *s = cublas.statusString(status))
      message += std::string(" (") + s + ")";
  return Status::error(message);
}

} // namespace

Expected<std::unique_ptr<Cublas>> Cublas::create(CudaContext &) {
  KOPT_RETURN_IF_ERROR(loadCublas());
  std::unique_ptr<Cublas> result(new Cublas());
  cublasHandle_t h = nullptr;
  KOPT_RETURN_IF_ERROR(check(cublas.create(&h), "cublasCreate"));
  result->handle = h;
  result->path = cublas.path;
  return std::move(result);
}

Cublas::~Cublas() {
  if (handle)
    cublas.destroy(static_cast<cublasHandle_t>(handle));
}

Status Cublas::gemmRowMajorF32(int64_t m, int64_t n, int64_t k, bool transposeA,
                               bool transposeB, DType inputType, DevicePtr a,
                               DevicePtr b, DevicePtr result, Stream stream) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (m <= 0 || n <= 0 || k <= 0 || m > kMax || n > kMax || k > kMax)
    return Status::error("cublasGemmEx: sizes M=" + std::to_string(m) +
                         " N=" + std::to_string(n) + " K=" + std::to_string(k) +
                         " out of range");
  cudaDataType type = inputType == DType::F32   ? CUDA_R_32F
                      : inputType == DType::F16 ? CUDA_R_16F
                                                : CUDA_R_16BF;
  auto h = static_cast<cublasHandle_t>(handle);
  KOPT_RETURN_IF_ERROR(
      check(cublas.setStream(h, reinterpret_cast<cudaStream_t>(stream)),
            "cublasSetStream"));
  // cuBLAS is column-major. A row-major [R, C] array is the column-major
  // [C, R] array of its transpose, so compute result^T (N x M, column-major)
  // = op(b)^T * op(a)^T: cuBLAS's first operand is our b, its second our a.
  // op(b)^T is b's storage as seen column-major when transposeB, else that
  // storage transposed; likewise for a.
  cublasOperation_t opFirst = transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = static_cast<int>(transposeB ? k : n); // b's row length
  int lda = static_cast<int>(transposeA ? m : k); // a's row length
  const float alpha = 1.0f, beta = 0.0f;
  return check(cublas.gemmEx(h, opFirst, opSecond, static_cast<int>(n),
                             static_cast<int>(m), static_cast<int>(k), &alpha,
                             reinterpret_cast<const void *>(b), type, ldb,
                             reinterpret_cast<const void *>(a), type, lda,
                             &beta, reinterpret_cast<void *>(result),
                             CUDA_R_32F, static_cast<int>(n),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx(M=" + std::to_string(m) + ", N=" +
                   std::to_string(n) + ", K=" + std::to_string(k) + ")");
}

} // namespace kopt::rt
