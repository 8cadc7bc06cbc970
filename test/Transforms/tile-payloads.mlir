// The kernel builders clone the linalg payloads into the kernels. A payload may
// capture constants defined around its linalg.generic (they are cloned along);
// any other value from outside the payload is rejected with a located error
// (the builders would otherwise leave uses of values they erase).
// RUN: kopt-opt %s -split-input-file -verify-diagnostics --kopt-lower-to-gpu --kopt-tile | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: gpu.func @relu_0(
// The captured zero cloned with the payload (once per lane of the vector).
// CHECK:         %[[ZERO:cst_[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    arith.maximumf %{{.*}}, %[[ZERO]] : f32
func.func @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kopt.kernel "relu_0" ins(%x : tensor<4x8xf32>) -> tensor<4x8xf32> attributes {source = {attrs = {}, name = "relu", params = ["input", "result"]}} {
  ^bb0(%in0: tensor<4x8xf32>):
    %cst = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.maximumf %in, %cst : f32
      linalg.yield %m : f32
    } -> tensor<4x8xf32>
    kopt.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @captures_a_computed_value(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kopt.kernel "relu_0" ins(%x : tensor<4x8xf32>) -> tensor<4x8xf32> attributes {source = {attrs = {}, name = "relu", params = ["input", "result"]}} {
  ^bb0(%in0: tensor<4x8xf32>):
    %cst = arith.constant 1.000000e+00 : f32
    %two = arith.addf %cst, %cst : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      // expected-error @+1 {{'arith.maximumf' op uses a value defined outside its linalg.generic's payload (only constants may be captured)}}
      %m = arith.maximumf %in, %two : f32
      linalg.yield %m : f32
    } -> tensor<4x8xf32>
    kopt.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A matmul's epilogue capturing a constant (a ReLU on the accumulator) through
// the upstream tiling step and the builder (the kernel carries the schedule
// kopt-select-schedule gives its workload, marked checked, as kopt-tile needs).
// CHECK-LABEL: gpu.func @matmul_0(
// CHECK:         arith.maximumf
// CHECK:         arith.truncf
func.func @matmul_relu(%a: tensor<100x64xbf16>, %b: tensor<64x96xbf16>) -> tensor<100x96xbf16> {
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<100x64xbf16>, tensor<64x96xbf16>) -> tensor<100x96xbf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 128, block_n = 256, block_k = 32, warp_m = 64, warp_n = 64, stages = 1, split_k = 1, swizzle = 8, vector_width = 2, persistent = false>, schedule_checked_for = "sm_90a",  source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<100x64xbf16>, %y: tensor<64x96xbf16>):
    %acc0 = tensor.empty() : tensor<100x96xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<100x96xf32>) -> tensor<100x96xf32>
    %mm = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<100x64xbf16>, tensor<64x96xbf16>) outs(%acc : tensor<100x96xf32>) {
    ^bb0(%in: bf16, %in_0: bf16, %out: f32):
      %1 = arith.extf %in : bf16 to f32
      %2 = arith.extf %in_0 : bf16 to f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    } -> tensor<100x96xf32>
    %out0 = tensor.empty() : tensor<100x96xbf16>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<100x96xf32>) outs(%out0 : tensor<100x96xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %m = arith.maximumf %in, %zero : f32
      %t = arith.truncf %m : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<100x96xbf16>
    kopt.yield %r : tensor<100x96xbf16>
  }
  return %0 : tensor<100x96xbf16>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// A contraction whose payload is not acc + a * b (here acc + -(a * b)) is
// rejected: the tensor-core builders compute acc + a * b only.
func.func @matmul_negated(%a: tensor<100x64xbf16>, %b: tensor<64x96xbf16>) -> tensor<100x96xf32> {
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<100x64xbf16>, tensor<64x96xbf16>) -> tensor<100x96xf32> attributes {source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<100x64xbf16>, %y: tensor<64x96xbf16>):
    %acc0 = tensor.empty() : tensor<100x96xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<100x96xf32>) -> tensor<100x96xf32>
    // expected-error @+1 {{'linalg.generic' op the contraction's payload must be acc + a * b (each input used as it is or extended to the accumulator's type, nothing else)}}
    %mm = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<100x64xbf16>, tensor<64x96xbf16>) outs(%acc : tensor<100x96xf32>) {
    ^bb0(%in: bf16, %in_0: bf16, %out: f32):
      %1 = arith.extf %in : bf16 to f32
      %2 = arith.extf %in_0 : bf16 to f32
      %3 = arith.mulf %1, %2 : f32
      %n = arith.negf %3 : f32
      %4 = arith.addf %out, %n : f32
      linalg.yield %4 : f32
    } -> tensor<100x96xf32>
    kopt.yield %mm : tensor<100x96xf32>
  }
  return %0 : tensor<100x96xf32>
}
