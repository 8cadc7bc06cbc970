// Numerical check of kopt.matmul on the CPU (the linalg form, lowered by upstream
// passes and run by mlir-runner): each transpose flag, and f32 accumulation with
// one rounding for bf16.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-lower-to-linalg | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print(%t: tensor<2x2xf32>) {
  %u = tensor.cast %t : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  // A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]]:
  // A B = [[58, 64], [139, 154]].
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = arith.constant dense<[[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]> : tensor<3x2xf32>
  // The same matrices stored transposed: at = A^T (3x2), bt = B^T (2x3, a PyTorch
  // Linear weight [out, in]).
  %at = arith.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
  %bt = arith.constant dense<[[7.0, 9.0, 11.0], [8.0, 10.0, 12.0]]> : tensor<2x3xf32>

  // CHECK:      {{\[}}[58, 64],
  // CHECK-NEXT: [139, 154]]
  %c0 = kopt.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  call @print(%c0) : (tensor<2x2xf32>) -> ()
  // transpose_a: A is at^T.
  // CHECK:      {{\[}}[58, 64],
  // CHECK-NEXT: [139, 154]]
  %c1 = kopt.matmul %at, %b {transpose_a} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  call @print(%c1) : (tensor<2x2xf32>) -> ()
  // transpose_b: B is bt^T (x @ W^T).
  // CHECK:      {{\[}}[58, 64],
  // CHECK-NEXT: [139, 154]]
  %c2 = kopt.matmul %a, %bt {transpose_b} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x2xf32>
  call @print(%c2) : (tensor<2x2xf32>) -> ()
  // Both.
  // CHECK:      {{\[}}[58, 64],
  // CHECK-NEXT: [139, 154]]
  %c3 = kopt.matmul %at, %bt {transpose_a, transpose_b} : tensor<3x2xf32>, tensor<2x3xf32> -> tensor<2x2xf32>
  call @print(%c3) : (tensor<2x2xf32>) -> ()
  // Both flags on a (2x3) and b (3x2): the product a^T b^T (3x3) =
  // [[1, 4], [2, 5], [3, 6]] x [[7, 9, 11], [8, 10, 12]].
  // CHECK:      {{\[}}[39, 49, 59],
  // CHECK-NEXT: [54, 68, 82],
  // CHECK-NEXT: [69, 87, 105]]
  %c4 = kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<3x3xf32>
  %c4u = tensor.cast %c4 : tensor<3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%c4u) : (tensor<*xf32>) -> ()

  // bf16 operands: products and sum in f32, one rounding at the end.
  // [1, 2^-9, 2^-9, 2^-9] . [1, 1, 1, 1] = 1 + 3 * 2^-9 = 1.005859 rounds to
  // 1 + 2^-7 = 1.0078125 in bf16; a bf16 accumulator would stay at 1.
  // CHECK: {{\[}}[1.00781]]
  %p = arith.constant dense<[[1.0, 0.001953125, 0.001953125, 0.001953125]]> : tensor<1x4xf32>
  %q = arith.constant dense<1.0> : tensor<4x1xf32>
  %pb = kopt.cast %p : tensor<1x4xf32> to tensor<1x4xbf16>
  %qb = kopt.cast %q : tensor<4x1xf32> to tensor<4x1xbf16>
  %rb = kopt.matmul %pb, %qb : tensor<1x4xbf16>, tensor<4x1xbf16> -> tensor<1x1xbf16>
  %r = kopt.cast %rb : tensor<1x1xbf16> to tensor<1x1xf32>
  %ru = tensor.cast %r : tensor<1x1xf32> to tensor<*xf32>
  call @printMemrefF32(%ru) : (tensor<*xf32>) -> ()
  // The same product with an f32 result keeps all bits: 1.005859.
  // CHECK: {{\[}}[1.00586]]
  %rf = kopt.matmul %pb, %qb : tensor<1x4xbf16>, tensor<4x1xbf16> -> tensor<1x1xf32>
  %rfu = tensor.cast %rf : tensor<1x1xf32> to tensor<*xf32>
  call @printMemrefF32(%rfu) : (tensor<*xf32>) -> ()

  // f16 with a Linear-style weight: [1, 2] x [[0.5, 0.25], [1, -1]]^T = [1, -1].
  // CHECK: {{\[}}[1, -1]]
  %h = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xf16>
  %hw = arith.constant dense<[[0.5, 0.25], [1.0, -1.0]]> : tensor<2x2xf16>
  %hr = kopt.matmul %h, %hw {transpose_b} : tensor<1x2xf16>, tensor<2x2xf16> -> tensor<1x2xf32>
  %hru = tensor.cast %hr : tensor<1x2xf32> to tensor<*xf32>
  call @printMemrefF32(%hru) : (tensor<*xf32>) -> ()
  return
}
