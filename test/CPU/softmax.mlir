// Numerical check of kopt.softmax on the CPU: the linalg form that defines the op
// (kopt-lower-to-linalg), lowered by upstream passes to LLVM and run by mlir-runner.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-lower-to-linalg | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print(%t: tensor<2x3xf32>) {
  %u = tensor.cast %t : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  // softmax([0, ln 2]) = [1, 2] / 3.
  // CHECK: [0.333333, 0.666667]
  %x = arith.constant dense<[[0.0, 0.693147180559945]]> : tensor<1x2xf32>
  %y = kopt.softmax %x : tensor<1x2xf32>
  %yu = tensor.cast %y : tensor<1x2xf32> to tensor<*xf32>
  call @printMemrefF32(%yu) : (tensor<*xf32>) -> ()

  // Rows are independent; adding a constant to a row changes nothing (the max is
  // subtracted first, so 1000 does not overflow exp); equal inputs give 1/3 each.
  // softmax([1, 2, 3]) = [e^-2, e^-1, 1] / (1 + e^-1 + e^-2).
  // CHECK:      [0.0900306, 0.244728, 0.665241]
  // CHECK-NEXT: [0.0900306, 0.244728, 0.665241]
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [1001.0, 1002.0, 1003.0]]> : tensor<2x3xf32>
  %b = kopt.softmax %a : tensor<2x3xf32>
  call @print(%b) : (tensor<2x3xf32>) -> ()
  // CHECK:      [0.333333, 0.333333, 0.333333]
  // CHECK-NEXT: [0, 0, 1]
  %c = arith.constant dense<[[-5.0, -5.0, -5.0], [-1.0e30, -1.0e30, 0.0]]> : tensor<2x3xf32>
  %d = kopt.softmax %c : tensor<2x3xf32>
  call @print(%d) : (tensor<2x3xf32>) -> ()

  // bf16 in and out: computed in f32, rounded once to bf16 (8 significant bits):
  // 0.0900306 -> 0.0898438 (184 * 2^-11), 0.244728 -> 0.245117 (251 * 2^-10),
  // 0.665241 -> 0.664062 (170 * 2^-8).
  // CHECK: [0.0898438, 0.245117, 0.664062]
  %e = arith.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %eb = kopt.cast %e : tensor<1x3xf32> to tensor<1x3xbf16>
  %fb = kopt.softmax %eb : tensor<1x3xbf16>
  %f = kopt.cast %fb : tensor<1x3xbf16> to tensor<1x3xf32>
  %fu = tensor.cast %f : tensor<1x3xf32> to tensor<*xf32>
  call @printMemrefF32(%fu) : (tensor<*xf32>) -> ()

  // A rank-3 input: softmax over the last dimension of each [i, j] row.
  // CHECK: {{\[}}{{\[}}[0.5, 0.5],
  // CHECK-NEXT: [0.268941, 0.731059]],
  // CHECK-NEXT: {{\[}}[0.731059, 0.268941],
  // CHECK-NEXT: [0.5, 0.5]]]
  %g = arith.constant dense<[[[0.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [7.0, 7.0]]]> : tensor<2x2x2xf32>
  %h = kopt.softmax %g : tensor<2x2x2xf32>
  %hu = tensor.cast %h : tensor<2x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%hu) : (tensor<*xf32>) -> ()
  return
}
