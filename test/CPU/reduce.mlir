// Numerical check of kopt.reduce on the CPU (the linalg form, lowered by upstream
// passes and run by mlir-runner): sum, max and mean over the last dimension.
// REQUIRES: mlir-runner
// RUN: kopt-opt %s --kopt-lower-to-linalg | mlir-opt %cpu_to_llvm \
// RUN:   | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print2(%t: tensor<2xf32>) {
  %u = tensor.cast %t : tensor<2xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @print0(%t: tensor<f32>) {
  %u = tensor.cast %t : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [-8.0, -1.0, -5.0, -2.0]]> : tensor<2x4xf32>
  // CHECK: [10, -16]
  %s = kopt.reduce sum %x : tensor<2x4xf32> -> tensor<2xf32>
  call @print2(%s) : (tensor<2xf32>) -> ()
  // CHECK: [4, -1]
  %m = kopt.reduce max %x : tensor<2x4xf32> -> tensor<2xf32>
  call @print2(%m) : (tensor<2xf32>) -> ()
  // mean = sum / 4.
  // CHECK: [2.5, -4]
  %a = kopt.reduce mean %x : tensor<2x4xf32> -> tensor<2xf32>
  call @print2(%a) : (tensor<2xf32>) -> ()

  // A rank-1 input reduces to a rank-0 tensor.
  // CHECK: [4.5]
  %v = arith.constant dense<[3.0, 6.0]> : tensor<2xf32>
  %vm = kopt.reduce mean %v : tensor<2xf32> -> tensor<f32>
  call @print0(%vm) : (tensor<f32>) -> ()
  // CHECK: [6]
  %vx = kopt.reduce max %v : tensor<2xf32> -> tensor<f32>
  call @print0(%vx) : (tensor<f32>) -> ()

  // max of all -inf is -inf (the identity); a NaN makes the max NaN.
  // CHECK: [-inf]
  // CHECK: [{{-?}}nan]
  %ninf = arith.constant dense<0xFF800000> : tensor<3xf32>
  %mi = kopt.reduce max %ninf : tensor<3xf32> -> tensor<f32>
  call @print0(%mi) : (tensor<f32>) -> ()
  %one = arith.constant 1.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %withnan = tensor.from_elements %one, %nan, %one : tensor<3xf32>
  %mn = kopt.reduce max %withnan : tensor<3xf32> -> tensor<f32>
  call @print0(%mn) : (tensor<f32>) -> ()

  // bf16 input, f32 accumulation: 256 + 1 + 1 + ... (64 ones) = 320 exactly, where
  // a bf16 accumulator would stop at 256 (256 + 1 rounds back to 256 in bf16).
  // The result can be any float type: f32 gives 320; mean into bf16 gives
  // 320 / 65 = 4.923 -> 4.9375 (bf16 step 2^-5 in [4, 8)).
  // CHECK: [320]
  // CHECK: [4.9375]
  %big = arith.constant dense<256.0> : tensor<1xf32>
  %ones = arith.constant dense<1.0> : tensor<64xf32>
  %cat = tensor.concat dim(0) %big, %ones : (tensor<1xf32>, tensor<64xf32>) -> tensor<65xf32>
  %catb = kopt.cast %cat : tensor<65xf32> to tensor<65xbf16>
  %sb = kopt.reduce sum %catb : tensor<65xbf16> -> tensor<f32>
  call @print0(%sb) : (tensor<f32>) -> ()
  %mb = kopt.reduce mean %catb : tensor<65xbf16> -> tensor<bf16>
  %mbf = kopt.cast %mb : tensor<bf16> to tensor<f32>
  call @print0(%mbf) : (tensor<f32>) -> ()

  // A rank-3 input: rows are the leading [2, 2] indices.
  // CHECK:      {{\[}}[3, 7],
  // CHECK-NEXT: [11, 15]]
  %t = arith.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]> : tensor<2x2x2xf32>
  %ts = kopt.reduce sum %t : tensor<2x2x2xf32> -> tensor<2x2xf32>
  %tsu = tensor.cast %ts : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%tsu) : (tensor<*xf32>) -> ()
  return
}
