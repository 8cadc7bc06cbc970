// kopt-fuse's matmul epilogues: the elementwise ops over a matmul's [M, N]
// result that read it join its kernel (bias, GELU, SiLU, a residual add,
// SwiGLU's silu(gate) * up with up from another kernel), when the kernel keeps
// one output of the matmul's element type and the matmul's operands come from
// outside; a kernel holds one matmul; a matmul takes no producer.
// RUN: kopt-opt %s -split-input-file --kopt-fuse | FileCheck %s
// The result is a fixed point: a second run changes nothing.
// RUN: kopt-opt %s -split-input-file --kopt-fuse | kopt-opt -split-input-file --kopt-fuse | FileCheck %s
// The fused kernels compile to PTX that ptxas assembles.
// RUN: kopt-opt %s -split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// BERT's FFN1: matmul, bias (a broadcast row: an input), GELU: one kernel.
// CHECK-LABEL: func.func @bias_gelu(
// CHECK:         %[[K:.*]] = kopt.kernel "matmul_add_gelu_0" ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<64x256xf16>, tensor<128x256xf16>, tensor<128xf16>) -> tensor<64x128xf16>
// CHECK-SAME:      ops = [{attrs = {transpose_a = false, transpose_b = true}, name = "matmul", operands = ["in0", "in1"], results = ["t0"]}, {attrs = {}, name = "add", operands = ["t0", "in2"], results = ["t1"]}, {attrs = {approximate = "none"}, name = "gelu", operands = ["t1"], results = ["out0"]}]
// CHECK-NOT:     kopt.kernel
// CHECK:         return %[[K]]
func.func @bias_gelu(%x: tensor<64x256xf16>, %w: tensor<128x256xf16>, %b: tensor<128xf16>) -> tensor<64x128xf16> {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<64x256xf16>, tensor<128x256xf16> -> tensor<64x128xf16>
  %a = kopt.add %m, %b : tensor<64x128xf16>, tensor<128xf16> -> tensor<64x128xf16>
  %g = kopt.gelu %a : tensor<64x128xf16>
  return %g : tensor<64x128xf16>
}

// -----

// log1p and log as a matmul's epilogue, like the other unary ops.
// CHECK-LABEL: func.func @log_epilogue(
// CHECK:         %[[K:.*]] = kopt.kernel "matmul_log1p_log_0" ins(%{{.*}}, %{{.*}} : tensor<64x256xbf16>, tensor<128x256xbf16>) -> tensor<64x128xbf16>
// CHECK-SAME:      ops = [{attrs = {transpose_a = false, transpose_b = true}, name = "matmul", operands = ["in0", "in1"], results = ["t0"]}, {attrs = {}, name = "log1p", operands = ["t0"], results = ["t1"]}, {attrs = {}, name = "log", operands = ["t1"], results = ["out0"]}]
// CHECK-NOT:     kopt.kernel
// CHECK:         return %[[K]]
func.func @log_epilogue(%x: tensor<64x256xbf16>, %w: tensor<128x256xbf16>) -> tensor<64x128xbf16> {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<64x256xbf16>, tensor<128x256xbf16> -> tensor<64x128xbf16>
  %p = kopt.log1p %m : tensor<64x128xbf16>
  %l = kopt.log %p : tensor<64x128xbf16>
  return %l : tensor<64x128xbf16>
}

// -----

// A residual add after the down projection: the residual is an input.
// CHECK-LABEL: func.func @residual(
// CHECK:         kopt.kernel "matmul_add_0" ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<16x512xbf16>, tensor<256x512xbf16>, tensor<16x256xbf16>)
// CHECK-NOT:     kopt.kernel
func.func @residual(%x: tensor<16x512xbf16>, %w: tensor<256x512xbf16>, %h: tensor<16x256xbf16>) -> tensor<16x256xbf16> {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<16x512xbf16>, tensor<256x512xbf16> -> tensor<16x256xbf16>
  %y = kopt.add %h, %m : tensor<16x256xbf16>, tensor<16x256xbf16> -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}

// -----

// Refusals: the matmul's result is also returned (two outputs), so the relu
// stays apart; a cast to another element type after a matmul stays apart (the
// kernel's C keeps the matmul's type).
// CHECK-LABEL: func.func @refused(
// CHECK:         %[[M:.*]] = kopt.kernel "matmul_0"
// CHECK:         kopt.kernel "relu_0" ins(%[[M]] :
// CHECK:         %[[N:.*]] = kopt.kernel "matmul_1"
// CHECK:         kopt.kernel "cast_0" ins(%[[N]] :
func.func @refused(%x: tensor<16x512xbf16>, %w: tensor<256x512xbf16>) -> (tensor<16x256xbf16>, tensor<16x256xbf16>, tensor<16x256xf32>) {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<16x512xbf16>, tensor<256x512xbf16> -> tensor<16x256xbf16>
  %r = kopt.relu %m : tensor<16x256xbf16>
  %n = kopt.matmul %x, %w {transpose_b} : tensor<16x512xbf16>, tensor<256x512xbf16> -> tensor<16x256xbf16>
  %c = kopt.cast %n : tensor<16x256xbf16> to tensor<16x256xf32>
  return %m, %r, %c : tensor<16x256xbf16>, tensor<16x256xbf16>, tensor<16x256xf32>
}

// -----

// One matmul per kernel: an add of two matmuls' results joins the first; an
// op on the input of a matmul stays apart even when it is read again after it.
// CHECK-LABEL: func.func @two_matmuls(
// CHECK:         %[[E:.*]] = kopt.kernel "exp_0"
// CHECK:         %[[B:.*]] = kopt.kernel "matmul_0" ins(%[[E]], %{{.*}} :
// CHECK:         kopt.kernel "matmul_add_mul_0" ins(%[[E]], %{{.*}}, %[[B]] :
func.func @two_matmuls(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = kopt.exp %x : tensor<64x64xf32>
  %a = kopt.matmul %e, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %b = kopt.matmul %e, %w {transpose_b} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %s = kopt.add %a, %b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %y = kopt.mul %s, %e : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
