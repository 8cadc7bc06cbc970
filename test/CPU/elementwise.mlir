// Numerical check of the elementwise kopt ops on the CPU (the linalg form, lowered
// by upstream passes and run by mlir-runner): NumPy broadcasting, each unary op
// (log and log1p also at their special values), gelu in both forms, cast rounding.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-lower-to-linalg | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print23(%t: tensor<2x3xf32>) {
  %u = tensor.cast %t : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @print3(%t: tensor<3xf32>) {
  %u = tensor.cast %t : tensor<3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @print4(%t: tensor<4xf32>) {
  %u = tensor.cast %t : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  //===--------------------------------------------------------------------===//
  // Binary ops with broadcasting
  //===--------------------------------------------------------------------===//
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %row = arith.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %col = arith.constant dense<[[100.0], [200.0]]> : tensor<2x1xf32>
  %s = arith.constant dense<0.5> : tensor<f32>
  %r13 = arith.constant dense<[[10.0, 20.0, 30.0]]> : tensor<1x3xf32>
  %c21 = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>

  // A bias row (a missing leading dimension).
  // CHECK:      {{\[}}[11, 22, 33],
  // CHECK-NEXT: [14, 25, 36]]
  %0 = kopt.add %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  call @print23(%0) : (tensor<2x3xf32>) -> ()
  // A column (a size-1 dimension), on the left-hand side.
  // CHECK:      {{\[}}[101, 102, 103],
  // CHECK-NEXT: [204, 205, 206]]
  %1 = kopt.add %col, %x : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  call @print23(%1) : (tensor<2x3xf32>) -> ()
  // A rank-0 scalar.
  // CHECK:      {{\[}}[0.5, 1.5, 2.5],
  // CHECK-NEXT: [3.5, 4.5, 5.5]]
  %2 = kopt.sub %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  call @print23(%2) : (tensor<2x3xf32>) -> ()
  // Both operands broadcast: [2, 1] * [1, 3] is an outer product.
  // CHECK:      {{\[}}[10, 20, 30],
  // CHECK-NEXT: [20, 40, 60]]
  %3 = kopt.mul %c21, %r13 : tensor<2x1xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
  call @print23(%3) : (tensor<2x3xf32>) -> ()
  // CHECK:      {{\[}}[0.1, 0.1, 0.1],
  // CHECK-NEXT: [0.4, 0.25, 0.2]]
  %4 = kopt.div %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  call @print23(%4) : (tensor<2x3xf32>) -> ()

  // max and min propagate NaN (arith.maximumf / minimumf).
  // CHECK:      [2, 2, {{-?}}nan, 1]
  // CHECK-NEXT: data =
  // CHECK-NEXT: [1, -3, {{-?}}nan, {{-?}}nan]
  %nan = arith.constant 0x7FC00000 : f32
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %f2 = arith.constant 2.0 : f32
  %pn = tensor.from_elements %f1, %f2, %nan, %f1 : tensor<4xf32>
  %pq = tensor.from_elements %f1, %f2, %nan, %nan : tensor<4xf32>
  %lh = arith.constant dense<[2.0, -3.0, 5.0, 0.0]> : tensor<4xf32>
  %5 = kopt.max %pn, %lh : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  call @print4(%5) : (tensor<4xf32>) -> ()
  %6 = kopt.min %lh, %pq : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  call @print4(%6) : (tensor<4xf32>) -> ()

  //===--------------------------------------------------------------------===//
  // Unary ops at 0, 1, -1
  //===--------------------------------------------------------------------===//
  %v = arith.constant dense<[0.0, 1.0, -1.0]> : tensor<3xf32>
  // CHECK: [1, 2.71828, 0.367879]
  %e = kopt.exp %v : tensor<3xf32>
  call @print3(%e) : (tensor<3xf32>) -> ()
  // CHECK: [-0, -1, 1]
  %n = kopt.neg %v : tensor<3xf32>
  call @print3(%n) : (tensor<3xf32>) -> ()
  // CHECK: [0, 1, 1]
  %a = kopt.abs %v : tensor<3xf32>
  call @print3(%a) : (tensor<3xf32>) -> ()
  // CHECK: [0, 0.761594, -0.761594]
  %t = kopt.tanh %v : tensor<3xf32>
  call @print3(%t) : (tensor<3xf32>) -> ()
  // sigmoid(0) = 0.5; sigmoid(+-1) = 0.731059, 0.268941.
  // CHECK: [0.5, 0.731059, 0.268941]
  %sg = kopt.sigmoid %v : tensor<3xf32>
  call @print3(%sg) : (tensor<3xf32>) -> ()
  // silu(x) = x sigmoid(x): 0, 0.731059, -0.268941.
  // CHECK: [0, 0.731059, -0.268941]
  %si = kopt.silu %v : tensor<3xf32>
  call @print3(%si) : (tensor<3xf32>) -> ()
  // CHECK: [0, 1, 0]
  %re = kopt.relu %v : tensor<3xf32>
  call @print3(%re) : (tensor<3xf32>) -> ()
  %sq = arith.constant dense<[4.0, 2.0, 0.25]> : tensor<3xf32>
  // CHECK: [2, 1.41421, 0.5]
  %sqrt = kopt.sqrt %sq : tensor<3xf32>
  call @print3(%sqrt) : (tensor<3xf32>) -> ()
  // CHECK: [0.5, 0.707107, 2]
  %rsqrt = kopt.rsqrt %sq : tensor<3xf32>
  call @print3(%rsqrt) : (tensor<3xf32>) -> ()
  // log: 0 at 1, ln 2 = 0.693147; -inf at +-0, NaN below 0, +inf at +inf.
  // CHECK: [0, 0.693147, -0.693147, 2]
  %lv = arith.constant dense<[1.0, 2.0, 0.5, 7.38905609893065]> : tensor<4xf32>
  %log = kopt.log %lv : tensor<4xf32>
  call @print4(%log) : (tensor<4xf32>) -> ()
  // CHECK: [-inf, -inf, {{-?}}nan, inf]
  %inf = arith.constant 0x7F800000 : f32
  %fm0 = arith.constant -0.0 : f32
  %fm1 = arith.constant -1.0 : f32
  %ls = tensor.from_elements %f0, %fm0, %fm1, %inf : tensor<4xf32>
  %logs = kopt.log %ls : tensor<4xf32>
  call @print4(%logs) : (tensor<4xf32>) -> ()
  // log1p(x) = log(1 + x), accurate near 0: log1p(1e-7) = 1e-07 where
  // log(1 + 1e-7) in f32 would give 1.19209e-07 (1 + 1e-7 rounds to 1 + 2^-23).
  // CHECK: [0, 0.693147, -0.693147, 1e-07]
  %pv = arith.constant dense<[0.0, 1.0, -0.5, 1.0e-07]> : tensor<4xf32>
  %log1p = kopt.log1p %pv : tensor<4xf32>
  call @print4(%log1p) : (tensor<4xf32>) -> ()
  // -inf at -1, NaN below -1, +inf at +inf, -0 at -0.
  // CHECK: [-inf, {{-?}}nan, inf, -0]
  %fm2 = arith.constant -2.0 : f32
  %ps = tensor.from_elements %fm1, %fm2, %inf, %fm0 : tensor<4xf32>
  %log1ps = kopt.log1p %ps : tensor<4xf32>
  call @print4(%log1ps) : (tensor<4xf32>) -> ()

  // gelu, erf form: 0.5 x (1 + erf(x / sqrt 2)) = 0, 0.841345, -0.158655.
  // CHECK: [0, 0.841345, -0.158655]
  %g0 = kopt.gelu %v : tensor<3xf32>
  call @print3(%g0) : (tensor<3xf32>) -> ()
  // gelu, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = 0, 0.841192,
  // -0.158808.
  // CHECK: [0, 0.841192, -0.158808]
  %g1 = kopt.gelu %v approximate(tanh) : tensor<3xf32>
  call @print3(%g1) : (tensor<3xf32>) -> ()
  // bf16 gelu (erf form), rounded once: 0.841345 -> 0.839844, -0.158655 -> -0.158203.
  // CHECK: [0, 0.839844, -0.158203]
  %vb = kopt.cast %v : tensor<3xf32> to tensor<3xbf16>
  %gb = kopt.gelu %vb : tensor<3xbf16>
  %gbf = kopt.cast %gb : tensor<3xbf16> to tensor<3xf32>
  call @print3(%gbf) : (tensor<3xf32>) -> ()

  //===--------------------------------------------------------------------===//
  // cast: round to nearest, ties to even
  //===--------------------------------------------------------------------===//
  // To bf16 (steps of 2^-7 in [1, 2), 2^-6 in [2, 4)): 1 + 2^-8 is a tie and goes
  // to 1 (even); 1 + 3 * 2^-8 is a tie and goes to 1 + 2^-6 (even); 1.005 goes to
  // 1 + 2^-7; pi goes to 3.140625.
  // CHECK: [1, 1.01562, 1.00781, 3.14062]
  %cv = arith.constant dense<[1.00390625, 1.01171875, 1.005, 3.14159265]> : tensor<4xf32>
  %cb = kopt.cast %cv : tensor<4xf32> to tensor<4xbf16>
  %cbf = kopt.cast %cb : tensor<4xbf16> to tensor<4xf32>
  call @print4(%cbf) : (tensor<4xf32>) -> ()
  // To f16: 65504 is the largest finite value; 65520 (the midpoint to 65536)
  // overflows to inf; 1 + 2^-11 is a tie and goes to 1; 2^-24 is the smallest
  // subnormal.
  // CHECK: [65504, inf, 1, 5.96046e-08]
  %hv = arith.constant dense<[65504.0, 65520.0, 1.00048828125, 5.9604644775390625e-08]> : tensor<4xf32>
  %hb = kopt.cast %hv : tensor<4xf32> to tensor<4xf16>
  %hbf = kopt.cast %hb : tensor<4xf16> to tensor<4xf32>
  call @print4(%hbf) : (tensor<4xf32>) -> ()
  // bf16 -> f16 rounds once (through exact f32): 1 + 2^-7 is exact in f16.
  // CHECK: [1, 1.01562, 1.00781, 3.14062]
  %bh = kopt.cast %cb : tensor<4xbf16> to tensor<4xf16>
  %bhf = kopt.cast %bh : tensor<4xf16> to tensor<4xf32>
  call @print4(%bhf) : (tensor<4xf32>) -> ()
  return
}
