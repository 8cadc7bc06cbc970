// kopt-fuse's fusion decisions: chains of elementwise ops of one result shape
// form one kernel (named after its ops, `source` listing them); broadcast
// operands and values from other kernels are its inputs; a value used outside
// is an output (several outputs where needed); a matmul takes the ops after it
// as its epilogue and none before it (row ops: test/Transforms/fuse-rows.mlir;
// matmul epilogues: test/Transforms/fuse-epilogues.mlir); no grouping makes kernels depend on each
// other in a cycle. test/Transforms/fuse-off.mlir has the one-op kernels
// (fuse=false).
// RUN: kopt-opt %s --kopt-fuse | FileCheck %s
// The result is a fixed point: a second run changes nothing.
// RUN: kopt-opt %s --kopt-fuse | kopt-opt --kopt-fuse | FileCheck %s
// Fusion off: one kernel per op.
// RUN: kopt-opt %s --kopt-fuse="fuse=false" | FileCheck %s --check-prefix=OFF

// Gemma-2 logit soft-capping: div, tanh and mul are one kernel; the scalar cap
// (a broadcast operand) is one input, read by two ops; two internal values.
// CHECK-LABEL: func.func @softcap(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<16x256xf32>, %[[C:[^:]*]]: tensor<f32>
// CHECK:         %[[K:.*]] = kopt.kernel "div_tanh_mul_0" ins(%[[X]], %[[C]] : tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
// CHECK-SAME:      attributes {source = {ops = [{attrs = {}, name = "div", operands = ["in0", "in1"], results = ["t0"]}, {attrs = {}, name = "tanh", operands = ["t0"], results = ["t1"]}, {attrs = {}, name = "mul", operands = ["t1", "in1"], results = ["out0"]}], params = ["in0", "in1", "out0"], values = [{name = "t0", type = tensor<16x256xf32>}, {name = "t1", type = tensor<16x256xf32>}]}} {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<16x256xf32>, %[[B:.*]]: tensor<f32>):
// CHECK-NEXT:      %[[D:.*]] = kopt.div %[[A]], %[[B]]
// CHECK-NEXT:      %[[T:.*]] = kopt.tanh %[[D]]
// CHECK-NEXT:      %[[M:.*]] = kopt.mul %[[T]], %[[B]]
// CHECK-NEXT:      kopt.yield %[[M]] : tensor<16x256xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[K]]
// OFF-LABEL:   func.func @softcap(
// OFF:           kopt.kernel "div_0"
// OFF:           kopt.kernel "tanh_0"
// OFF:           kopt.kernel "mul_0"
func.func @softcap(%logits: tensor<16x256xf32>, %cap: tensor<f32>) -> tensor<16x256xf32> {
  %z = kopt.div %logits, %cap : tensor<16x256xf32>, tensor<f32> -> tensor<16x256xf32>
  %t = kopt.tanh %z : tensor<16x256xf32>
  %y = kopt.mul %t, %cap : tensor<16x256xf32>, tensor<f32> -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

// log and log1p join chains like the other unary ops: softplus(x) = log1p(exp(x))
// plus log|x|, five ops, one kernel (named after its first four ops and
// `_more`).
// CHECK-LABEL: func.func @log_chain(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<16x256xbf16>
// CHECK:         %[[K:.*]] = kopt.kernel "exp_log1p_abs_log_more_0" ins(%[[X]] : tensor<16x256xbf16>) -> tensor<16x256xbf16>
// CHECK-SAME:      ops = [{attrs = {}, name = "exp", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "log1p", operands = ["t0"], results = ["t1"]}, {attrs = {}, name = "abs", operands = ["in0"], results = ["t2"]}, {attrs = {}, name = "log", operands = ["t2"], results = ["t3"]}, {attrs = {}, name = "add", operands = ["t1", "t3"], results = ["out0"]}]
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<16x256xbf16>):
// CHECK-NEXT:      %[[E:.*]] = kopt.exp %[[A]]
// CHECK-NEXT:      %[[P:.*]] = kopt.log1p %[[E]]
// CHECK-NEXT:      %[[B:.*]] = kopt.abs %[[A]]
// CHECK-NEXT:      %[[L:.*]] = kopt.log %[[B]]
// CHECK-NEXT:      %[[S:.*]] = kopt.add %[[P]], %[[L]]
// CHECK-NEXT:      kopt.yield %[[S]] : tensor<16x256xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[K]]
// OFF-LABEL:   func.func @log_chain(
// OFF:           kopt.kernel "exp_0"
// OFF:           kopt.kernel "log1p_0"
// OFF:           kopt.kernel "abs_0"
// OFF:           kopt.kernel "log_0"
// OFF:           kopt.kernel "add_0"
func.func @log_chain(%x: tensor<16x256xbf16>) -> tensor<16x256xbf16> {
  %e = kopt.exp %x : tensor<16x256xbf16>
  %p = kopt.log1p %e : tensor<16x256xbf16>
  %a = kopt.abs %x : tensor<16x256xbf16>
  %l = kopt.log %a : tensor<16x256xbf16>
  %y = kopt.add %p, %l : tensor<16x256xbf16>, tensor<16x256xbf16> -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}

// SwiGLU: silu(gate) * up is the gate matmul's epilogue (one kernel), reading
// the up matmul's result (its own kernel: a kernel holds one matmul).
// CHECK-LABEL: func.func @swiglu(
// CHECK:         %[[U:.*]] = kopt.kernel "matmul_0" ins(%{{.*}}, %{{.*}} : tensor<16x64xbf16>, tensor<128x64xbf16>)
// CHECK:         %[[P:.*]] = kopt.kernel "matmul_silu_mul_0" ins(%{{.*}}, %{{.*}}, %[[U]] : tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
// CHECK-SAME:      ops = [{attrs = {transpose_a = false, transpose_b = true}, name = "matmul", operands = ["in0", "in1"], results = ["t0"]}, {attrs = {}, name = "silu", operands = ["t0"], results = ["t1"]}, {attrs = {}, name = "mul", operands = ["t1", "in2"], results = ["out0"]}], params = ["in0", "in1", "in2", "out0"]
// CHECK:         return %[[P]]
// OFF-LABEL:   func.func @swiglu(
// OFF:           kopt.kernel "silu_0"
// OFF:           kopt.kernel "mul_1"
func.func @swiglu(%x: tensor<16x64xbf16>, %wg: tensor<128x64xbf16>, %wu: tensor<128x64xbf16>) -> tensor<16x128xbf16> {
  %g = kopt.matmul %x, %wg {transpose_b} : tensor<16x64xbf16>, tensor<128x64xbf16> -> tensor<16x128xbf16>
  %u = kopt.matmul %x, %wu {transpose_b} : tensor<16x64xbf16>, tensor<128x64xbf16> -> tensor<16x128xbf16>
  %s = kopt.silu %g : tensor<16x128xbf16>
  %p = kopt.mul %s, %u : tensor<16x128xbf16>, tensor<16x128xbf16> -> tensor<16x128xbf16>
  return %p : tensor<16x128xbf16>
}

// A value returned and read by a later op of the chain is an output that the
// later ops read (not recomputed): two outputs, the second a cast to bf16.
// CHECK-LABEL: func.func @two_outputs(
// CHECK:         %[[K:.*]]:2 = kopt.kernel "add_exp_cast_0" ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>, tensor<4x8xbf16>
// CHECK-SAME:      ops = [{attrs = {}, name = "add", operands = ["in0", "in1"], results = ["out0"]}, {attrs = {}, name = "exp", operands = ["out0"], results = ["t0"]}, {attrs = {}, name = "cast", operands = ["t0"], results = ["out1"]}], params = ["in0", "in1", "out0", "out1"], values = [{name = "t0", type = tensor<4x8xf32>}]
// CHECK:           %[[S:.*]] = kopt.add
// CHECK:           %[[E:.*]] = kopt.exp %[[S]]
// CHECK:           %[[CA:.*]] = kopt.cast %[[E]]
// CHECK-NEXT:      kopt.yield %[[S]], %[[CA]] : tensor<4x8xf32>, tensor<4x8xbf16>
// CHECK:         return %[[K]]#0, %[[K]]#1
func.func @two_outputs(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %s = kopt.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %e = kopt.exp %s : tensor<4x8xf32>
  %c = kopt.cast %e : tensor<4x8xf32> to tensor<4x8xbf16>
  return %s, %c : tensor<4x8xf32>, tensor<4x8xbf16>
}

// A diamond: exp(x) and neg(x) both feed the add; one kernel, x one input.
// CHECK-LABEL: func.func @diamond(
// CHECK:         kopt.kernel "exp_neg_add_0" ins(%{{.*}} : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-SAME:      ops = [{attrs = {}, name = "exp", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "neg", operands = ["in0"], results = ["t1"]}, {attrs = {}, name = "add", operands = ["t0", "t1"], results = ["out0"]}]
// CHECK-NOT:     kopt.kernel
// CHECK:         return
func.func @diamond(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = kopt.exp %x : tensor<4x8xf32>
  %n = kopt.neg %x : tensor<4x8xf32>
  %a = kopt.add %e, %n : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// Results of other shapes do not fuse: exp of the bias vector is a kernel of
// its own, read by the add's kernel with a broadcast.
// CHECK-LABEL: func.func @shapes_differ(
// CHECK:         %[[E:.*]] = kopt.kernel "exp_0" ins(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
// CHECK:         kopt.kernel "add_relu_0" ins(%{{.*}}, %[[E]] : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
func.func @shapes_differ(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = kopt.exp %b : tensor<8xf32>
  %a = kopt.add %x, %e : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %r = kopt.relu %a : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// A matmul takes no producer: the add before it stays apart; the relu after it
// is its epilogue.
// CHECK-LABEL: func.func @matmul_breaks(
// CHECK:         %[[A:.*]] = kopt.kernel "add_0" ins
// CHECK:         kopt.kernel "matmul_relu_0" ins(%[[A]], %{{.*}} :
// CHECK-NOT:     kopt.kernel
func.func @matmul_breaks(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = kopt.add %x, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %m = kopt.matmul %a, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %r = kopt.relu %m : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// The mul reads the add and the matmul: it is the matmul's epilogue, reading
// the add's result as an input; the add cannot join (a matmul takes no
// producer). Row ops and the elementwise ops around them, and the refusals
// that keep kernels from depending on each other in a cycle:
// test/Transforms/fuse-rows.mlir.
// CHECK-LABEL: func.func @no_cycle(
// CHECK:         %[[A:.*]] = kopt.kernel "add_1" ins
// CHECK:         kopt.kernel "matmul_mul_0" ins(%[[A]], %{{.*}} :
func.func @no_cycle(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = kopt.add %x, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %s = kopt.matmul %a, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %m = kopt.mul %a, %s : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %m : tensor<8x8xf32>
}

// A fused kernel takes the place of its last op: the matmul that reads its
// first op's result (an output of the kernel) moves after it.
// CHECK-LABEL: func.func @reordered(
// CHECK:         %[[K:.*]]:2 = kopt.kernel "exp_neg_0" ins
// CHECK:         %[[M:.*]] = kopt.kernel "matmul_1" ins(%[[K]]#0, %{{.*}} :
// CHECK:         return %[[K]]#1, %[[M]]
func.func @reordered(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = kopt.exp %x : tensor<8x8xf32>
  %m = kopt.matmul %e, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %n = kopt.neg %e : tensor<8x8xf32>
  return %n, %m : tensor<8x8xf32>, tensor<8x8xf32>
}
