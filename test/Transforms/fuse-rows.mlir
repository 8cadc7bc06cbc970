// kopt-fuse's fusion decisions around row ops: a row op (reduce, softmax,
// rmsnorm, layernorm) takes the elementwise ops over its input's shape that
// produce its input and that consume its result into its kernel; a value used
// outside is an output (add + RMSNorm writes the sum and the normalized rows);
// producers join only rows that the row kernel keeps in registers;
// a kernel holds at most one row op; weights, biases and broadcast operands
// are inputs; no grouping makes kernels depend on each other in a cycle.
// RUN: kopt-opt %s -split-input-file --kopt-fuse | FileCheck %s
// The result is a fixed point: a second run changes nothing.
// RUN: kopt-opt %s -split-input-file --kopt-fuse | kopt-opt -split-input-file --kopt-fuse | FileCheck %s
// Fusion off: one kernel per op.
// RUN: kopt-opt %s -split-input-file --kopt-fuse="fuse=false" | FileCheck %s --check-prefix=OFF

// Llama's residual add + post-attention RMSNorm: one kernel, two outputs (the
// residual stream and the normalized rows); the weight is an input.
// CHECK-LABEL: func.func @add_rmsnorm(
// CHECK-SAME:    %[[H:[^:]*]]: tensor<16x4096xbf16>, %[[A:[^:]*]]: tensor<16x4096xbf16>, %[[W:[^:]*]]: tensor<4096xbf16>
// CHECK:         %[[K:.*]]:2 = kopt.kernel "add_rmsnorm_0" ins(%[[H]], %[[A]], %[[W]] : tensor<16x4096xbf16>, tensor<16x4096xbf16>, tensor<4096xbf16>) -> tensor<16x4096xbf16>, tensor<16x4096xbf16>
// CHECK-SAME:      source = {ops = [{attrs = {}, name = "add", operands = ["in0", "in1"], results = ["out0"]}, {attrs = {eps = 9.99999974E-6 : f32}, name = "rmsnorm", operands = ["out0", "in2"], results = ["out1"]}], params = ["in0", "in1", "in2", "out0", "out1"], values = []}
// CHECK:           kopt.add
// CHECK-NEXT:      kopt.rmsnorm
// CHECK-NEXT:      kopt.yield
// CHECK:         return %[[K]]#0, %[[K]]#1
// OFF-LABEL:   func.func @add_rmsnorm(
// OFF:           kopt.kernel "add_0"
// OFF:           kopt.kernel "rmsnorm_0"
func.func @add_rmsnorm(%h: tensor<16x4096xbf16>, %a: tensor<16x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<16x4096xbf16>, tensor<16x4096xbf16>) {
  %s = kopt.add %h, %a : tensor<16x4096xbf16>, tensor<16x4096xbf16> -> tensor<16x4096xbf16>
  %y = kopt.rmsnorm %s weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  return %s, %y : tensor<16x4096xbf16>, tensor<16x4096xbf16>
}

// -----

// Eager attention's softmax(scores * scale + mask) and a cast after it: one
// kernel; the scalar scale and the [S, S] mask broadcast over the heads are
// inputs, the scaled and masked scores internal values.
// CHECK-LABEL: func.func @scale_mask_softmax(
// CHECK:         %[[K:.*]] = kopt.kernel "mul_add_softmax_cast_0" ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x64x64xbf16>, tensor<bf16>, tensor<64x64xbf16>) -> tensor<1x4x64x64xf32>
// CHECK-SAME:      values = [{name = "t0", type = tensor<1x4x64x64xbf16>}, {name = "t1", type = tensor<1x4x64x64xbf16>}, {name = "t2", type = tensor<1x4x64x64xbf16>}]
// CHECK-NOT:     kopt.kernel
// CHECK:         return %[[K]]
func.func @scale_mask_softmax(%x: tensor<1x4x64x64xbf16>, %c: tensor<bf16>, %m: tensor<64x64xbf16>) -> tensor<1x4x64x64xf32> {
  %s = kopt.mul %x, %c : tensor<1x4x64x64xbf16>, tensor<bf16> -> tensor<1x4x64x64xbf16>
  %a = kopt.add %s, %m : tensor<1x4x64x64xbf16>, tensor<64x64xbf16> -> tensor<1x4x64x64xbf16>
  %p = kopt.softmax %a : tensor<1x4x64x64xbf16>
  %r = kopt.cast %p : tensor<1x4x64x64xbf16> to tensor<1x4x64x64xf32>
  return %r : tensor<1x4x64x64xf32>
}

// -----

// log and log1p as a row kernel's prologue and epilogue, like the other unary
// ops: log(x) into the softmax, log1p of its result, one kernel.
// CHECK-LABEL: func.func @log_softmax_log1p(
// CHECK:         %[[K:.*]] = kopt.kernel "log_softmax_log1p_0" ins(%{{.*}} : tensor<4x512xf32>) -> tensor<4x512xf32>
// CHECK-SAME:      ops = [{attrs = {}, name = "log", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "softmax", operands = ["t0"], results = ["t1"]}, {attrs = {}, name = "log1p", operands = ["t1"], results = ["out0"]}]
// CHECK:           kopt.log
// CHECK-NEXT:      kopt.softmax
// CHECK-NEXT:      kopt.log1p
// CHECK-NEXT:      kopt.yield
// CHECK-NOT:     kopt.kernel
// CHECK:         return %[[K]]
// OFF-LABEL:   func.func @log_softmax_log1p(
// OFF:           kopt.kernel "log_0"
// OFF:           kopt.kernel "softmax_0"
// OFF:           kopt.kernel "log1p_0"
func.func @log_softmax_log1p(%x: tensor<4x512xf32>) -> tensor<4x512xf32> {
  %l = kopt.log %x : tensor<4x512xf32>
  %s = kopt.softmax %l : tensor<4x512xf32>
  %p = kopt.log1p %s : tensor<4x512xf32>
  return %p : tensor<4x512xf32>
}

// -----

// An op that reads a row op's input and its result joins them: no cycle, all
// three ops read the same rows.
// CHECK-LABEL: func.func @reads_input_and_result(
// CHECK:         %[[K:.*]] = kopt.kernel "add_softmax_mul_0" ins
// CHECK-NOT:     kopt.kernel
func.func @reads_input_and_result(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = kopt.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = kopt.softmax %a : tensor<4x8xf32>
  %m = kopt.mul %a, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// One row op per kernel: the second softmax of the sum gets its own kernel,
// which the mul then joins; the mul cannot join the first kernel as well (the
// two kernels would read each other's results: a cycle). The sum and the
// first softmax are outputs of the first kernel.
// CHECK-LABEL: func.func @two_row_ops(
// CHECK:         %[[K:.*]]:2 = kopt.kernel "add_softmax_0" ins
// CHECK:         %[[L:.*]] = kopt.kernel "softmax_mul_0" ins(%[[K]]#0, %[[K]]#1 :
// CHECK:         return %[[L]]
func.func @two_row_ops(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = kopt.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s1 = kopt.softmax %a : tensor<4x8xf32>
  %s2 = kopt.softmax %a : tensor<4x8xf32>
  %m = kopt.mul %s1, %s2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// Ops over other shapes stay out: the weight's producer (Gemma's 1 + w, over
// [n]) and the op on a reduce's [rows] result keep their own kernels. The exp
// after the rmsnorm joins it, so the reduce that reads the exp (a second row
// op) cannot.
// CHECK-LABEL: func.func @other_shapes(
// CHECK:         %[[W:.*]] = kopt.kernel "add_0" ins({{.*}} : tensor<8xf32>, tensor<f32>)
// CHECK:         %[[N:.*]] = kopt.kernel "rmsnorm_exp_0" ins(%{{.*}}, %[[W]] :
// CHECK:         %[[R:.*]] = kopt.kernel "reduce_0" ins(%[[N]] :
// CHECK:         %[[S:.*]] = kopt.kernel "sqrt_0" ins(%[[R]] :
// CHECK:         return %[[S]]
func.func @other_shapes(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %one: tensor<f32>) -> tensor<4xf32> {
  %w1 = kopt.add %w, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %n = kopt.rmsnorm %x weight(%w1 : tensor<8xf32>) eps = 1.0e-06 : tensor<4x8xf32>
  %e = kopt.exp %n : tensor<4x8xf32>
  %r = kopt.reduce sum %e : tensor<4x8xf32> -> tensor<4xf32>
  %s = kopt.sqrt %r : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A producer of a row longer than the row kernel keeps in registers (262144
// columns: a cluster of 8 blocks of 1024 threads of 32 elements) stays apart:
// the row kernel would loop over the row and recompute it in every loop. A
// consumer still joins (it runs once, in the output loop).
// CHECK-LABEL: func.func @long_rows(
// CHECK:         %[[D:.*]] = kopt.kernel "div_0" ins
// CHECK:         kopt.kernel "softmax_cast_0" ins(%[[D]] :
func.func @long_rows(%x: tensor<16x262152xf32>, %t: tensor<f32>) -> tensor<16x262152xbf16> {
  %z = kopt.div %x, %t : tensor<16x262152xf32>, tensor<f32> -> tensor<16x262152xf32>
  %p = kopt.softmax %z : tensor<16x262152xf32>
  %c = kopt.cast %p : tensor<16x262152xf32> to tensor<16x262152xbf16>
  return %c : tensor<16x262152xbf16>
}

// -----

// A vocabulary row (Llama-3's 128256 columns, sampling at temperature t) fits
// in the registers of a cluster: the division joins the softmax's kernel.
// CHECK-LABEL: func.func @vocab_rows(
// CHECK:         kopt.kernel "div_softmax_0" ins
// CHECK-NOT:     kopt.kernel
func.func @vocab_rows(%x: tensor<64x128256xf32>, %t: tensor<f32>) -> tensor<64x128256xf32> {
  %z = kopt.div %x, %t : tensor<64x128256xf32>, tensor<f32> -> tensor<64x128256xf32>
  %p = kopt.softmax %z : tensor<64x128256xf32>
  return %p : tensor<64x128256xf32>
}
