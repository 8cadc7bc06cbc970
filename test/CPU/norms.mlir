// Numerical check of kopt.rmsnorm and kopt.layernorm on the CPU (the linalg form,
// lowered by upstream passes and run by mlir-runner), against hand-computed values.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-lower-to-linalg | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print2(%t: tensor<1x2xf32>) {
  %u = tensor.cast %t : tensor<1x2xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @print4(%t: tensor<1x4xf32>) {
  %u = tensor.cast %t : tensor<1x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  //===--------------------------------------------------------------------===//
  // rmsnorm: x / sqrt(mean(x^2) + eps) [* weight]
  //===--------------------------------------------------------------------===//

  // [3, 4] with eps 0: mean(x^2) = 12.5, so [3, 4] / sqrt(12.5) = [0.848528, 1.131371].
  // CHECK: [0.848528, 1.13137]
  %x = arith.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %r0 = kopt.rmsnorm %x eps = 0.0 : tensor<1x2xf32>
  call @print2(%r0) : (tensor<1x2xf32>) -> ()

  // With weight [2, 0.5]: [1.697056, 0.565685].
  // CHECK: [1.69706, 0.565685]
  %w = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %r1 = kopt.rmsnorm %x weight(%w : tensor<2xf32>) eps = 0.0 : tensor<1x2xf32>
  call @print2(%r1) : (tensor<1x2xf32>) -> ()

  // eps is added to the mean square: [1, 1] with eps 1 gives 1 / sqrt(2).
  // CHECK: [0.707107, 0.707107]
  %ones = arith.constant dense<[[1.0, 1.0]]> : tensor<1x2xf32>
  %r2 = kopt.rmsnorm %ones eps = 1.0 : tensor<1x2xf32>
  call @print2(%r2) : (tensor<1x2xf32>) -> ()

  // A zero row stays zero with eps > 0 (0 * 1/sqrt(eps)); with eps = 0 it is
  // 0 * inf = NaN, as in PyTorch.
  // CHECK: [0, 0]
  // CHECK-NEXT: data =
  // CHECK-NEXT: {{\[}}[{{-?}}nan, {{-?}}nan]]
  %zeros = arith.constant dense<[[0.0, 0.0]]> : tensor<1x2xf32>
  %r3 = kopt.rmsnorm %zeros eps = 1.0e-05 : tensor<1x2xf32>
  call @print2(%r3) : (tensor<1x2xf32>) -> ()
  %r4 = kopt.rmsnorm %zeros eps = 0.0 : tensor<1x2xf32>
  call @print2(%r4) : (tensor<1x2xf32>) -> ()

  // Rank 1 and rank 3: always over the last dimension.
  // CHECK: [0.848528, 1.13137]
  %v = arith.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %r5 = kopt.rmsnorm %v eps = 0.0 : tensor<2xf32>
  %r5u = tensor.cast %r5 : tensor<2xf32> to tensor<*xf32>
  call @printMemrefF32(%r5u) : (tensor<*xf32>) -> ()
  // CHECK: {{\[}}{{\[}}[0.848528, 1.13137],
  // CHECK-NEXT: [1.13137, 0.848528]]]
  %t = arith.constant dense<[[[3.0, 4.0], [-4.0, -3.0]]]> : tensor<1x2x2xf32>
  %tw = arith.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %tn = kopt.neg %t : tensor<1x2x2xf32>
  %r6 = kopt.rmsnorm %tn weight(%tw : tensor<2xf32>) eps = 0.0 : tensor<1x2x2xf32>
  %r6a = kopt.abs %r6 : tensor<1x2x2xf32>
  %r6u = tensor.cast %r6a : tensor<1x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%r6u) : (tensor<*xf32>) -> ()

  // bf16 (Llama): computed in f32 and rounded once: 0.848528 -> 0.847656,
  // 1.131371 -> 1.132812 (bf16 steps of 2^-8 and 2^-7).
  // CHECK: [0.847656, 1.13281]
  %xb = kopt.cast %x : tensor<1x2xf32> to tensor<1x2xbf16>
  %wb = arith.constant dense<[1.0, 1.0]> : tensor<2xbf16>
  %rb = kopt.rmsnorm %xb weight(%wb : tensor<2xbf16>) eps = 0.0 : tensor<1x2xbf16>
  %rbf = kopt.cast %rb : tensor<1x2xbf16> to tensor<1x2xf32>
  call @print2(%rbf) : (tensor<1x2xf32>) -> ()

  //===--------------------------------------------------------------------===//
  // layernorm: (x - mean) / sqrt(var + eps) [* weight] [+ bias], biased variance
  //===--------------------------------------------------------------------===//

  // [1, 2, 3, 4] with eps 0: mean 2.5, var 1.25 (divided by n = 4, not n - 1),
  // (x - 2.5) / sqrt(1.25) = [-1.341641, -0.447214, 0.447214, 1.341641].
  // CHECK: [-1.34164, -0.447214, 0.447214, 1.34164]
  %y = arith.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %l0 = kopt.layernorm %y eps = 0.0 : tensor<1x4xf32>
  call @print4(%l0) : (tensor<1x4xf32>) -> ()

  // weight [1, 2, 0.5, -1]: [-1.341641, -0.894427, 0.223607, -1.341641].
  // CHECK: [-1.34164, -0.894427, 0.223607, -1.34164]
  %lw = arith.constant dense<[1.0, 2.0, 0.5, -1.0]> : tensor<4xf32>
  %l1 = kopt.layernorm %y weight(%lw : tensor<4xf32>) eps = 0.0 : tensor<1x4xf32>
  call @print4(%l1) : (tensor<1x4xf32>) -> ()

  // bias [0, 1, -1, 10]: [-1.341641, 0.552786, -0.552786, 11.341641].
  // CHECK: [-1.34164, 0.552786, -0.552786, 11.3416]
  %lb = arith.constant dense<[0.0, 1.0, -1.0, 10.0]> : tensor<4xf32>
  %l2 = kopt.layernorm %y bias(%lb : tensor<4xf32>) eps = 0.0 : tensor<1x4xf32>
  call @print4(%l2) : (tensor<1x4xf32>) -> ()

  // Both: (x - mean) * rstd * weight + bias = [-1.341641, 0.105573, -0.776393, 8.658359].
  // CHECK: [-1.34164, 0.105573, -0.776393, 8.65836]
  %l3 = kopt.layernorm %y weight(%lw : tensor<4xf32>) bias(%lb : tensor<4xf32>) eps = 0.0 : tensor<1x4xf32>
  call @print4(%l3) : (tensor<1x4xf32>) -> ()

  // A constant row normalizes to 0 when eps > 0; eps 1 changes the scale:
  // (x - 2.5) / sqrt(1.25 + 1) = [-1, -1/3, 1/3, 1].
  // CHECK: [0, 0, 0, 0]
  // CHECK-NEXT: data =
  // CHECK-NEXT: [-1, -0.333333, 0.333333, 1]
  %c = arith.constant dense<[[5.0, 5.0, 5.0, 5.0]]> : tensor<1x4xf32>
  %l4 = kopt.layernorm %c eps = 1.0e-05 : tensor<1x4xf32>
  call @print4(%l4) : (tensor<1x4xf32>) -> ()
  %l5 = kopt.layernorm %y eps = 1.0 : tensor<1x4xf32>
  call @print4(%l5) : (tensor<1x4xf32>) -> ()

  // A large offset: the variance is taken of x - mean (two passes), so
  // [10001, 10002, 10003, 10004] gives the same values as [1, 2, 3, 4]
  // (mean(x^2) - mean(x)^2 would lose all digits in f32).
  // CHECK: [-1.34164, -0.447214, 0.447214, 1.34164]
  %big = arith.constant dense<[[10001.0, 10002.0, 10003.0, 10004.0]]> : tensor<1x4xf32>
  %l6 = kopt.layernorm %big eps = 0.0 : tensor<1x4xf32>
  call @print4(%l6) : (tensor<1x4xf32>) -> ()

  // f16 with weight and bias, rounded once: -1.341641 -> -1.341797, 0.105573 ->
  // 0.105591, -0.776393 -> -0.776367, 8.658359 -> 8.656250 (f16 steps 2^-10 x 2^e).
  // CHECK: [-1.3418, 0.105591, -0.776367, 8.65625]
  %yh = kopt.cast %y : tensor<1x4xf32> to tensor<1x4xf16>
  %lwh = kopt.cast %lw : tensor<4xf32> to tensor<4xf16>
  %lbh = kopt.cast %lb : tensor<4xf32> to tensor<4xf16>
  %l7 = kopt.layernorm %yh weight(%lwh : tensor<4xf16>) bias(%lbh : tensor<4xf16>) eps = 0.0 : tensor<1x4xf16>
  %l7f = kopt.cast %l7 : tensor<1x4xf16> to tensor<1x4xf32>
  call @print4(%l7f) : (tensor<1x4xf32>) -> ()
  return
}
