// Every verifier error of dialects/Kopt/KoptOps.cpp, and the type constraints of
// dialects/Kopt/KoptOps.td (static shapes; f32, f16, bf16 elements; ranked tensors).
// RUN: kopt-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Type constraints shared by all ops
//===----------------------------------------------------------------------===//

func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kopt.exp' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<?x4xf32>'}}
  %y = kopt.exp %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @dynamic_shape_matmul(%a: tensor<?x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{'kopt.matmul' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<?x64xbf16>'}}
  %c = kopt.matmul %a, %b : tensor<?x64xbf16>, tensor<64x32xbf16> -> tensor<?x32xbf16>
  return %c : tensor<?x32xbf16>
}

// -----

func.func @dynamic_result(%x: tensor<4x8xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kopt.reduce' op result #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<?xf32>'}}
  %y = kopt.reduce sum %x : tensor<4x8xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

func.func @i32_elements(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'kopt.relu' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<4xi32>'}}
  %y = kopt.relu %x : tensor<4xi32>
  return %y : tensor<4xi32>
}

// -----

func.func @f64_elements(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{'kopt.add' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<4xf64>'}}
  %z = kopt.add %x, %y : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

func.func @f64_cast_result(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'kopt.cast' op result #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<4xf64>'}}
  %y = kopt.cast %x : tensor<4xf32> to tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

func.func @unranked_generic(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'kopt.softmax' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<*xf32>'}}
  %y = "kopt.softmax"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @unranked_custom(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{custom op 'kopt.exp' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %y = kopt.exp %x : tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @memref_operand(%x: memref<4xf32>) {
  // expected-error @+1 {{custom op 'kopt.exp' invalid kind of type specified: expected builtin.tensor, but found 'memref<4xf32>'}}
  %y = kopt.exp %x : memref<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

func.func @matmul_rank(%a: tensor<2x16x64xf32>, %b: tensor<64x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{'kopt.matmul' op expects 2-D operands and result, got ranks 3, 2 -> 2}}
  %c = kopt.matmul %a, %b : tensor<2x16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// -----

func.func @matmul_result_rank(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>) -> tensor<512xf32> {
  // expected-error @+1 {{'kopt.matmul' op expects 2-D operands and result, got ranks 2, 2 -> 1}}
  %c = kopt.matmul %a, %b : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<512xf32>
  return %c : tensor<512xf32>
}

// -----

func.func @matmul_mixed_types(%a: tensor<16x64xf16>, %b: tensor<64x32xbf16>) -> tensor<16x32xf32> {
  // expected-error @+1 {{'kopt.matmul' op expects operands of one element type, got 'f16' and 'bf16'}}
  %c = kopt.matmul %a, %b : tensor<16x64xf16>, tensor<64x32xbf16> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// -----

func.func @matmul_k_mismatch(%a: tensor<16x64xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'kopt.matmul' op contraction dimensions differ: A is 16x64 and B is 32x64 (after the transposes)}}
  %c = kopt.matmul %a, %b : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
  return %c : tensor<16x64xf32>
}

// -----

// A PyTorch Linear weight [out, in] used without transpose_b.
func.func @matmul_missing_transpose_b(%x: tensor<16x4096xbf16>, %w: tensor<14336x4096xbf16>) -> tensor<16x14336xbf16> {
  // expected-error @+1 {{'kopt.matmul' op contraction dimensions differ: A is 16x4096 and B is 14336x4096 (after the transposes)}}
  %c = kopt.matmul %x, %w : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  return %c : tensor<16x14336xbf16>
}

// -----

func.func @matmul_k_mismatch_transposed(%a: tensor<64x16xf32>, %b: tensor<32x48xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{'kopt.matmul' op contraction dimensions differ: A is 16x64 and B is 48x32 (after the transposes)}}
  %c = kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<64x16xf32>, tensor<32x48xf32> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// -----

func.func @matmul_result_shape(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'kopt.matmul' op result shape [32x16] does not match the product's [16x32]}}
  %c = kopt.matmul %a, %b : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<32x16xf32>
  return %c : tensor<32x16xf32>
}

// -----

func.func @matmul_result_shape_transpose_a(%a: tensor<64x16xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'kopt.matmul' op result shape [64x32] does not match the product's [16x32]}}
  %c = kopt.matmul %a, %b {transpose_a} : tensor<64x16xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  return %c : tensor<64x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

func.func @binary_element_types(%x: tensor<4x8xf32>, %y: tensor<8xbf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.add' op expects one element type for operands and result, got 'f32', 'bf16' -> 'f32'}}
  %z = kopt.add %x, %y : tensor<4x8xf32>, tensor<8xbf16> -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

func.func @binary_result_element_type(%x: tensor<4x8xbf16>, %y: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.mul' op expects one element type for operands and result, got 'bf16', 'bf16' -> 'f32'}}
  %z = kopt.mul %x, %y : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

func.func @binary_not_broadcastable(%x: tensor<4x8xf32>, %y: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.sub' op operand shapes [4x8] and [4] are not broadcast-compatible}}
  %z = kopt.sub %x, %y : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

func.func @binary_not_broadcastable_3d(%x: tensor<2x3x8xf16>, %y: tensor<4x1xf16>) -> tensor<2x4x8xf16> {
  // expected-error @+1 {{'kopt.max' op operand shapes [2x3x8] and [4x1] are not broadcast-compatible}}
  %z = kopt.max %x, %y : tensor<2x3x8xf16>, tensor<4x1xf16> -> tensor<2x4x8xf16>
  return %z : tensor<2x4x8xf16>
}

// -----

func.func @binary_result_not_broadcast_shape(%x: tensor<4x1xf32>, %y: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'kopt.div' op result shape [4x1] is not the broadcast shape [4x8]}}
  %z = kopt.div %x, %y : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x1xf32>
  return %z : tensor<4x1xf32>
}

// -----

// The result is the broadcast shape exactly: no extra leading dimensions.
func.func @binary_result_extra_rank(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'kopt.min' op result shape [1x8] is not the broadcast shape [8]}}
  %z = kopt.min %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<1x8xf32>
  return %z : tensor<1x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Unary ops, gelu, cast
//===----------------------------------------------------------------------===//

func.func @unary_type_change(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'kopt.sigmoid' op requires the same type for all operands and results}}
  %y = "kopt.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @unary_shape_change(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'kopt.gelu' op requires the same type for all operands and results}}
  %y = "kopt.gelu"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

func.func @log_type_change(%x: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.log' op requires the same type for all operands and results}}
  %y = "kopt.log"(%x) : (tensor<4xbf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @log1p_shape_change(%x: tensor<4xf16>) -> tensor<2x2xf16> {
  // expected-error @+1 {{'kopt.log1p' op requires the same type for all operands and results}}
  %y = "kopt.log1p"(%x) : (tensor<4xf16>) -> tensor<2x2xf16>
  return %y : tensor<2x2xf16>
}

// -----

func.func @log_f64_elements(%x: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{'kopt.log' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<4xf64>'}}
  %y = kopt.log %x : tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

func.func @log1p_dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kopt.log1p' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<?xf32>'}}
  %y = kopt.log1p %x : tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

func.func @gelu_bad_approximation(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %y = kopt.gelu %x approximate(erf) : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{'kopt.cast' op input shape [4x8] differs from result shape [8x4]}}
  %y = kopt.cast %x : tensor<4x8xf32> to tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

func.func @reduce_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'kopt.reduce' op expects an input of rank 1 or more}}
  %y = kopt.reduce sum %x : tensor<f32> -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @reduce_keepdim(%x: tensor<8x128256xf32>) -> tensor<8x1xf32> {
  // expected-error @+1 {{'kopt.reduce' op result shape [8x1] must be the input shape without its last dimension, [8]}}
  %y = kopt.reduce max %x : tensor<8x128256xf32> -> tensor<8x1xf32>
  return %y : tensor<8x1xf32>
}

// -----

func.func @reduce_first_dim(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'kopt.reduce' op result shape [16] must be the input shape without its last dimension, [8]}}
  %y = kopt.reduce mean %x : tensor<8x16xf32> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

func.func @reduce_rank1_result(%x: tensor<16xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'kopt.reduce' op result shape [1] must be the input shape without its last dimension, []}}
  %y = kopt.reduce sum %x : tensor<16xf32> -> tensor<1xf32>
  return %y : tensor<1xf32>
}

// -----

func.func @reduce_bad_kind(%x: tensor<16xf32>) -> tensor<f32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, mean]}}
  %y = kopt.reduce min %x : tensor<16xf32> -> tensor<f32>
  return %y : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

func.func @softmax_type_change(%x: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.softmax' op requires the same type for all operands and results}}
  %y = "kopt.softmax"(%x) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// rmsnorm
//===----------------------------------------------------------------------===//

func.func @rmsnorm_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'kopt.rmsnorm' op expects an input of rank 1 or more}}
  %y = kopt.rmsnorm %x eps = 1.0e-05 : tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @rmsnorm_negative_eps(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op eps must be in [0, 1], got -1e-05}}
  %y = kopt.rmsnorm %x eps = -1.0e-05 : tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

func.func @rmsnorm_eps_above_one(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // The launch manifest's rule (kopt::manifest::epsError): kopt-run refuses
  // an eps above 1, so the compiler does too.
  // expected-error @+1 {{'kopt.rmsnorm' op eps must be in [0, 1], got 2}}
  %y = kopt.rmsnorm %x eps = 2.0 : tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

func.func @layernorm_eps_above_one(%x: tensor<4x1600xf32>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op eps must be in [0, 1], got 1.5}}
  %y = kopt.layernorm %x eps = 1.5 : tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

func.func @rmsnorm_nan_eps(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op eps must be in [0, 1], got nan}}
  %y = kopt.rmsnorm %x eps = 0x7FC00000 : tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

func.func @rmsnorm_weight_shape(%x: tensor<4x4096xbf16>, %w: tensor<14336xbf16>) -> tensor<4x4096xbf16> {
  // expected-error @+1 {{'kopt.rmsnorm' op weight must have shape [4096] (the input's last dimension), got [14336]}}
  %y = kopt.rmsnorm %x weight(%w : tensor<14336xbf16>) eps = 1.0e-05 : tensor<4x4096xbf16>
  return %y : tensor<4x4096xbf16>
}

// -----

func.func @rmsnorm_weight_rank(%x: tensor<4x4096xbf16>, %w: tensor<1x4096xbf16>) -> tensor<4x4096xbf16> {
  // expected-error @+1 {{'kopt.rmsnorm' op weight must have shape [4096] (the input's last dimension), got [1x4096]}}
  %y = kopt.rmsnorm %x weight(%w : tensor<1x4096xbf16>) eps = 1.0e-05 : tensor<4x4096xbf16>
  return %y : tensor<4x4096xbf16>
}

// -----

func.func @rmsnorm_weight_type(%x: tensor<4x4096xbf16>, %w: tensor<4096xf32>) -> tensor<4x4096xbf16> {
  // expected-error @+1 {{'kopt.rmsnorm' op weight element type 'f32' differs from the input's 'bf16'}}
  %y = kopt.rmsnorm %x weight(%w : tensor<4096xf32>) eps = 1.0e-05 : tensor<4x4096xbf16>
  return %y : tensor<4x4096xbf16>
}

// -----

func.func @rmsnorm_result_type(%x: tensor<4x4096xbf16>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op failed to verify that all of {input, result} have same type}}
  %y = "kopt.rmsnorm"(%x) {eps = 1.0e-05 : f32} : (tensor<4x4096xbf16>) -> tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

func.func @rmsnorm_f64_eps(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op attribute 'eps' failed to satisfy constraint: 32-bit float attribute}}
  %y = "kopt.rmsnorm"(%x) {eps = 1.0e-05 : f64} : (tensor<4x4096xf32>) -> tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

func.func @rmsnorm_missing_eps(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op requires attribute 'eps'}}
  %y = "kopt.rmsnorm"(%x) : (tensor<4x4096xf32>) -> tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

//===----------------------------------------------------------------------===//
// layernorm
//===----------------------------------------------------------------------===//

func.func @layernorm_rank0(%x: tensor<bf16>) -> tensor<bf16> {
  // expected-error @+1 {{'kopt.layernorm' op expects an input of rank 1 or more}}
  %y = kopt.layernorm %x eps = 1.0e-05 : tensor<bf16>
  return %y : tensor<bf16>
}

// -----

func.func @layernorm_negative_eps(%x: tensor<4x1600xf32>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op eps must be in [0, 1], got -1}}
  %y = kopt.layernorm %x eps = -1.0 : tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

func.func @layernorm_weight_shape(%x: tensor<4x1600xf32>, %w: tensor<6400xf32>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op weight must have shape [1600] (the input's last dimension), got [6400]}}
  %y = kopt.layernorm %x weight(%w : tensor<6400xf32>) eps = 1.0e-05 : tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

func.func @layernorm_weight_type(%x: tensor<4x1600xf16>, %w: tensor<1600xf32>) -> tensor<4x1600xf16> {
  // expected-error @+1 {{'kopt.layernorm' op weight element type 'f32' differs from the input's 'f16'}}
  %y = kopt.layernorm %x weight(%w : tensor<1600xf32>) eps = 1.0e-05 : tensor<4x1600xf16>
  return %y : tensor<4x1600xf16>
}

// -----

func.func @layernorm_bias_shape(%x: tensor<4x1600xf32>, %w: tensor<1600xf32>, %b: tensor<4x1600xf32>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op bias must have shape [1600] (the input's last dimension), got [4x1600]}}
  %y = kopt.layernorm %x weight(%w : tensor<1600xf32>) bias(%b : tensor<4x1600xf32>) eps = 1.0e-05 : tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

func.func @layernorm_bias_type(%x: tensor<4x1600xf32>, %b: tensor<1600xbf16>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op bias element type 'bf16' differs from the input's 'f32'}}
  %y = kopt.layernorm %x bias(%b : tensor<1600xbf16>) eps = 1.0e-05 : tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

func.func @layernorm_result_type(%x: tensor<4x1600xf32>) -> tensor<4x1600xbf16> {
  // expected-error @+1 {{'kopt.layernorm' op failed to verify that all of {input, result} have same type}}
  %y = "kopt.layernorm"(%x) {eps = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x1600xf32>) -> tensor<4x1600xbf16>
  return %y : tensor<4x1600xbf16>
}

// -----

func.func @layernorm_missing_segments(%x: tensor<4x1600xf32>) -> tensor<4x1600xf32> {
  // expected-error @+1 {{'kopt.layernorm' op operand count (1) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
  %y = "kopt.layernorm"(%x) {eps = 1.0e-05 : f32} : (tensor<4x1600xf32>) -> tensor<4x1600xf32>
  return %y : tensor<4x1600xf32>
}

// -----

//===----------------------------------------------------------------------===//
// kopt.kernel and kopt.yield
//===----------------------------------------------------------------------===//

func.func @kernel_argument_count(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op body has 1 arguments for 2 inputs}}
  %0 = kopt.kernel "k" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kopt.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_argument_type(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'kopt.kernel' op body argument type 'tensor<4xbf16>' differs from its input's 'tensor<4xf32>'}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xbf16>):
    kopt.yield %a : tensor<4xbf16>
  }
  return %0 : tensor<4xbf16>
}

// -----

func.func @kernel_yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op yielded types differ from the result types}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %r = kopt.reduce sum %a : tensor<4xf32> -> tensor<f32>
    kopt.yield %r : tensor<f32>
  }
  return %0 : tensor<4xf32>
}

// -----

// kopt-select-schedule marks the schedule it checked; a mark without one is
// an error.
func.func @kernel_checked_without_schedule(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op has schedule_checked_for but no schedule}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {schedule_checked_for = "sm_90a"} {
  ^bb0(%a: tensor<4xf32>):
    kopt.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// The mark names the chip kopt-select-schedule checked for: a known chip only.
func.func @kernel_checked_unknown_chip(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op schedule_checked_for names an unknown chip 'sm_999' (kopt-select-schedule sets it)}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {schedule = #kopt.schedule<instruction = ffma, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, schedule_checked_for = "sm_999"} {
  ^bb0(%a: tensor<4xf32>):
    kopt.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Without an explicit kopt.yield the implicit one yields nothing.
func.func @kernel_implicit_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op yielded types differ from the result types}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.exp %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_result_type(%x: tensor<4xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kopt.kernel' op result #0 must be variadic of statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<?xf32>'}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<?xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = tensor.cast %a : tensor<4xf32> to tensor<?xf32>
    kopt.yield %c : tensor<?xf32>
  }
  return %0 : tensor<?xf32>
}

// -----

func.func @kernel_uses_value_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = kopt.kernel "k" -> tensor<4xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %e = kopt.exp %x : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_outside_kernel(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kopt.yield' op expects parent op to be one of 'kopt.kernel, kopt.mainloop'}}
  kopt.yield %x : tensor<4xf32>
}

// -----

// Kernel names become PTX entry names: C identifiers only.
func.func @kernel_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op name 'my-k' is not an identifier ([A-Za-z_][A-Za-z0-9_]*): it becomes the kernel's PTX entry name}}
  %0 = kopt.kernel "my-k" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.exp %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_name_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op name '' is not an identifier}}
  %0 = kopt.kernel "" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.exp %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tensors with an encoding (e.g. sparse) are not kopt tensors.
func.func @encoding(%x: tensor<4x8xf32, "enc">) -> tensor<4x8xf32, "enc"> {
  // expected-error @+1 {{'kopt.exp' op operand #0 must be statically shaped tensor of f32, f16 or bf16 without encoding, but got 'tensor<4x8xf32, "enc">'}}
  %y = kopt.exp %x : tensor<4x8xf32, "enc">
  return %y : tensor<4x8xf32, "enc">
}

// -----

func.func @infinite_eps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op eps must be in [0, 1], got inf}}
  %y = kopt.rmsnorm %x eps = 0x7F800000 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// `source` must describe the kernel's op (the manifest and kopt-run trust it).
func.func @kernel_source_lies(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source names op 'exp' but the body computes 'kopt.neg'}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "exp", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_source_params(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source needs 3 parameter names (operands, then result) for 'kopt.add'}}
  %0 = kopt.kernel "k" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "add", params = ["only"]}} {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %e = kopt.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @pack_rank(%x: tensor<4x8x2xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'kopt.pack' op expects a 2-D input and result, got ranks 3 -> 2}}
  %y = kopt.pack %x : tensor<4x8x2xf16> -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

func.func @pack_converts(%x: tensor<4x8xf16>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'kopt.pack' op copies without conversion: the input's element type 'f16' differs from the result's 'bf16'}}
  %y = kopt.pack %x : tensor<4x8xf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

func.func @pack_shrinks(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'kopt.pack' op result shape [4x8] is smaller than the transposed input's [8x4]; pack only pads}}
  %y = kopt.pack %x {transpose} : tensor<4x8xf16> -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

func.func @matmul_tf32_bf16(%a: tensor<16x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<16x32xf32> {
  // expected-error @+1 {{'kopt.matmul' op tf32 applies to f32 operands, got 'bf16'}}
  %c = kopt.matmul %a, %b {tf32} : tensor<16x64xbf16>, tensor<64x32xbf16> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

//===----------------------------------------------------------------------===//
// Attributes an op does not define (kopt::verifyKnownAttributes, every kopt op)
//===----------------------------------------------------------------------===//

// A misspelled unit attribute would otherwise be kept as a discardable
// attribute and the matmul compiled untransposed.
func.func @misspelled_attribute(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  // expected-error @+1 {{'kopt.matmul' op has an unknown attribute 'tranpose_b'; did you mean 'transpose_b'? (kopt.matmul takes tf32, transpose_a, transpose_b; attributes of other dialects, `dialect.name`, are kept)}}
  %c = kopt.matmul %x, %w {tranpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xbf16>
  return %c : tensor<16x32xbf16>
}

// -----

func.func @attribute_on_op_without_attributes(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.add' op has an unknown attribute 'fast' (kopt.add takes no attributes; attributes of other dialects, `dialect.name`, are kept)}}
  %z = kopt.add %x, %y {fast} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// The generic form too.
func.func @attribute_generic(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.exp' op has an unknown attribute 'approximate'}}
  %y = "kopt.exp"(%x) {approximate = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The kopt dialect defines no discardable attributes on its ops.
func.func @kopt_prefixed_attribute(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.rmsnorm' op has an unknown attribute 'kopt.eps' (kopt.rmsnorm takes eps; attributes of other dialects, `dialect.name`, are kept)}}
  %y = kopt.rmsnorm %x eps = 1.0e-05 {kopt.eps = 1.0 : f32} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @kernel_misspelled_source(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op has an unknown attribute 'sorce'; did you mean 'source'?}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {sorce = {attrs = {}, name = "neg", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    // expected-error @+1 {{'kopt.yield' op has an unknown attribute 'note' (kopt.yield takes no attributes;}}
    kopt.yield %e : tensor<4xf32> {note}
  }
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// kopt.kernel: `source` must be what the body computes (kopt::kernelSource)
//===----------------------------------------------------------------------===//

// -----

// transpose_b recorded false while the body transposes: the manifest and
// kopt-run's reference would describe another product.
func.func @kernel_source_attrs_differ(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  // expected-error @+1 {{'kopt.kernel' op source {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]} disagrees with the body's 'kopt.matmul', which is {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}}}
  %0 = kopt.kernel "k" ins(%x, %w : tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16> attributes {source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%a: tensor<16x64xbf16>, %b: tensor<32x64xbf16>):
    %c = kopt.matmul %a, %b {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xbf16>
    kopt.yield %c : tensor<16x32xbf16>
  }
  return %0 : tensor<16x32xbf16>
}

// -----

func.func @kernel_source_eps_differs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kopt.kernel' op source {attrs = {eps = 1.000000e-01 : f32}, name = "rmsnorm", params = ["input", "result"]} disagrees with the body's 'kopt.rmsnorm', which is {attrs = {eps = 9.99999974E-6 : f32}, name = "rmsnorm", params = ["input", "result"]}}}
  %0 = kopt.kernel "k" ins(%x : tensor<4x8xf32>) -> tensor<4x8xf32> attributes {source = {attrs = {eps = 0.1 : f32}, name = "rmsnorm", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4x8xf32>):
    %y = kopt.rmsnorm %a eps = 1.0e-05 : tensor<4x8xf32>
    kopt.yield %y : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @kernel_source_param_names(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source {attrs = {}, name = "sub", params = ["rhs", "lhs", "result"]} disagrees with the body's 'kopt.sub'}}
  %0 = kopt.kernel "k" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "sub", params = ["rhs", "lhs", "result"]}} {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %e = kopt.sub %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// The manifest names the kernel's parameters in order: `sub` of swapped
// block arguments computes y - x where the source says x - y.
func.func @kernel_source_operands_swapped(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op operand #0 of 'kopt.sub' is not the kernel's input #0; the source describes the kernel's parameters in order}}
  %0 = kopt.kernel "k" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "sub", params = ["lhs", "rhs", "result"]}} {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %e = kopt.sub %b, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_source_unused_input(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op 'kopt.neg' has 1 operands but the kernel has 2 inputs; the source describes the kernel's parameters in order}}
  %0 = kopt.kernel "k" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "neg", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %e = kopt.neg %b : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_source_yields_input(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op yields values other than the results of 'kopt.neg'}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "neg", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    kopt.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_source_two_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source describes one op, but the body computes 2 ops; a kernel with a source holds one kopt op and its kopt.yield, or lists its ops (`ops`)}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {source = {attrs = {}, name = "neg", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    %f = kopt.exp %e : tensor<4xf32>
    kopt.yield %f : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A fused kernel's `source` lists its ops (kopt::fusedKernelSource): here the
// exp reads the neg's result, not the kernel's input.
func.func @kernel_fused_source_operands(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source {ops = [{attrs = {}, name = "neg", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "exp", operands = ["in0"], results = ["out0"]}], params = ["in0", "out0"], values = [{name = "t0", type = tensor<4xf32>}]} disagrees with the body, which computes {ops = [{attrs = {}, name = "neg", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "exp", operands = ["t0"], results = ["out0"]}], params = ["in0", "out0"], values = [{name = "t0", type = tensor<4xf32>}]}}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {source = {ops = [{attrs = {}, name = "neg", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "exp", operands = ["in0"], results = ["out0"]}], params = ["in0", "out0"], values = [{name = "t0", type = tensor<4xf32>}]}} {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.neg %a : tensor<4xf32>
    %f = kopt.exp %e : tensor<4xf32>
    kopt.yield %f : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A source listing ops describes kopt ops only.
func.func @kernel_fused_source_other_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op source lists ops, but the body computes ops of other dialects too; a kernel with a source holds kopt ops and its kopt.yield}}
  %0 = kopt.kernel "k" ins(%x : tensor<4xf32>) -> tensor<4xf32> attributes {source = {ops = [{attrs = {}, name = "neg", operands = ["in0"], results = ["out0"]}], params = ["in0", "out0"], values = []}} {
  ^bb0(%a: tensor<4xf32>):
    %c = arith.constant dense<1.0> : tensor<4xf32>
    %e = kopt.neg %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
