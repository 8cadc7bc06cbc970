// Numerical check of kopt.pack and of kopt-pack-operands on the CPU (the linalg
// form, lowered by upstream passes and run by mlir-runner): zero padding, the
// transpose, and a matmul whose operands were packed (K = 3 padded to 8, B made
// K-major) giving the same result as the original.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-pack-operands="min-reuse=1" --kopt-lower-to-linalg \
// RUN:   | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s
// The rewrite happened (otherwise the matmul check would prove nothing):
// RUN: kopt-opt %s --kopt-pack-operands="min-reuse=1" | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @main(
// IR:         kopt.pack %{{.*}} : tensor<2x3xbf16> -> tensor<2x8xbf16>
// IR:         kopt.pack %{{.*}} {transpose} : tensor<3x2xbf16> -> tensor<2x8xbf16>
// IR:         kopt.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x2xf32>

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // Padded to 3x5: a zero row and two zero columns.
  // CHECK:      {{\[}}[1, 2, 3, 0, 0],
  // CHECK-NEXT: [4, 5, 6, 0, 0],
  // CHECK-NEXT: [0, 0, 0, 0, 0]]
  %p = kopt.pack %x : tensor<2x3xf32> -> tensor<3x5xf32>
  %pu = tensor.cast %p : tensor<3x5xf32> to tensor<*xf32>
  call @printMemrefF32(%pu) : (tensor<*xf32>) -> ()
  // Transposed (3x2) and padded to 4x2.
  // CHECK:      {{\[}}[1, 4],
  // CHECK-NEXT: [2, 5],
  // CHECK-NEXT: [3, 6],
  // CHECK-NEXT: [0, 0]]
  %t = kopt.pack %x {transpose} : tensor<2x3xf32> -> tensor<4x2xf32>
  %tu = tensor.cast %t : tensor<4x2xf32> to tensor<*xf32>
  call @printMemrefF32(%tu) : (tensor<*xf32>) -> ()

  // A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]] in bf16 (exact):
  // A B = [[58, 64], [139, 154]] after packing both operands.
  // CHECK:      {{\[}}[58, 64],
  // CHECK-NEXT: [139, 154]]
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xbf16>
  %b = arith.constant dense<[[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]> : tensor<3x2xbf16>
  %c = kopt.matmul %a, %b : tensor<2x3xbf16>, tensor<3x2xbf16> -> tensor<2x2xf32>
  %cu = tensor.cast %c : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%cu) : (tensor<*xf32>) -> ()
  return
}
