//===- Check.h - Compare a kernel's output with its reference ---*- C++ -*-===//
//
// The correctness check of kopt-run: every output element written (none left
// at the poison pattern, no NaN/Inf where the reference is finite), relative
// error ||out - ref||_2 / ||ref||_2 and max abs error within tolerances chosen
// by the output dtype.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CHECK_H
#define KOPT_RUNTIME_CHECK_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Error.h"

#include <cstdint>
#include <string>

namespace kopt::rt {

/// Tolerances of the check.
struct Tolerance {
  /// Bound on ||out - ref||_2 / ||ref||_2.
  double relErr = 0.0;
  /// Bound on max |out - ref|, as a multiple of relErr * max |ref|.
  double maxAbsFactor = 10.0;
};

/// The tolerance for an output of `dtype`: relative error 1e-5 for f32, 2e-3
/// for f16, 1e-2 for bf16 (also for matmuls with f32 output from bf16/f16
/// inputs: the tolerance follows the output dtype).
Tolerance toleranceFor(DType outputDtype);

/// The tolerance for `kernel`'s outputs: the loosest toleranceFor(dtype) over
/// its output parameters and internal values (each op of a fused kernel
/// rounds its result to its dtype; one op: its output's dtype), except for a
/// kernel with a matmul with `tf32` (TF32
/// allowed, f32 operands), whose inputs are treated
/// as f16-precision: at least toleranceFor(DType::F16), i.e. relative error
/// 2e-3 for an f32 result (see Check.cpp for why). Its reference stays the
/// exact f32 product.
Tolerance toleranceFor(const KernelSpec &kernel);

struct CheckResult {
  bool passed = false;
  /// ||out - ref||_2 / ||ref||_2 over elements where both are finite (the
  /// absolute ||out - ref||_2 when ||ref||_2 is 0).
  double relErr = 0.0;
  /// max |out - ref| over elements where both are finite.
  double maxAbsErr = 0.0;
  /// max |ref| over finite reference elements.
  double maxAbsRef = 0.0;
  /// The bounds applied.
  double relTol = 0.0;
  double maxAbsTol = 0.0;
  int64_t elements = 0;
  /// Elements still holding the poison pattern where the reference is not NaN.
  int64_t unwritten = 0;
  /// Other NaN/Inf outputs where the reference is finite.
  int64_t nonFinite = 0;
  /// Elements where the reference is NaN/Inf and the output differs from it.
  int64_t specialMismatch = 0;
  /// Index of the first bad element (-1 if none): unwritten, non-finite,
  /// mismatched special value, or the largest absolute error when only the
  /// error bounds fail.
  int64_t firstBadIndex = -1;
  /// Why the check failed ("" when it passed).
  std::string reason;
};

/// Compares the raw output array `out` (`count` elements of `dtype`, as
/// copied back from the device) with `ref` (`count` doubles).
CheckResult checkOutput(const void *out, DType dtype, const double *ref,
                        int64_t count, const Tolerance &tolerance);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_CHECK_H
