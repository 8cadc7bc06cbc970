// kopt-fuse with fusion off (`fuse=false`, the plan before elementwise
// fusion): every kopt op outside a kernel becomes its own kopt.kernel, named
// <op>_<n> with n counted per op name across the whole module, and carrying a
// `source` dictionary (op name, attributes as manifest values, parameter names).
// The one-op kernels are the same with fusion on (test/Transforms/fuse.mlir).
// RUN: kopt-opt %s --kopt-fuse="fuse=false" | FileCheck %s
// The result is a fixed point: a second run changes nothing.
// RUN: kopt-opt %s --kopt-fuse="fuse=false" | kopt-opt --kopt-fuse | FileCheck %s

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<16x4096xbf16>, %[[WG:[^:]*]]: tensor<14336x4096xbf16>, %[[WU:[^:]*]]: tensor<14336x4096xbf16>
// CHECK:         %[[G:.*]] = kopt.kernel "matmul_0" ins(%[[X]], %[[WG]] : tensor<16x4096xbf16>, tensor<14336x4096xbf16>) -> tensor<16x14336xbf16>
// CHECK-SAME:      attributes {source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<16x4096xbf16>, %[[B:.*]]: tensor<14336x4096xbf16>):
// CHECK-NEXT:      %[[MM:.*]] = kopt.matmul %[[A]], %[[B]] {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
// CHECK-NEXT:      kopt.yield %[[MM]] : tensor<16x14336xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[U:.*]] = kopt.kernel "matmul_1" ins(%[[X]], %[[WU]] : {{.*}}) -> tensor<16x14336xbf16>
// CHECK-SAME:      attributes {source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}}
// CHECK:         %[[S:.*]] = kopt.kernel "silu_0" ins(%[[G]] : tensor<16x14336xbf16>) -> tensor<16x14336xbf16>
// CHECK-SAME:      attributes {source = {attrs = {}, name = "silu", params = ["input", "result"]}} {
// CHECK-NEXT:    ^bb0(%[[SA:.*]]: tensor<16x14336xbf16>):
// CHECK-NEXT:      %[[SV:.*]] = kopt.silu %[[SA]] : tensor<16x14336xbf16>
// CHECK-NEXT:      kopt.yield %[[SV]] : tensor<16x14336xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[P:.*]] = kopt.kernel "mul_0" ins(%[[S]], %[[U]] : tensor<16x14336xbf16>, tensor<16x14336xbf16>) -> tensor<16x14336xbf16>
// CHECK-SAME:      attributes {source = {attrs = {}, name = "mul", params = ["lhs", "rhs", "result"]}}
// CHECK:         return %[[P]] : tensor<16x14336xbf16>
func.func @mlp(%x: tensor<16x4096xbf16>, %wg: tensor<14336x4096xbf16>, %wu: tensor<14336x4096xbf16>) -> tensor<16x14336xbf16> {
  %g = kopt.matmul %x, %wg {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %u = kopt.matmul %x, %wu {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %s = kopt.silu %g : tensor<16x14336xbf16>
  %p = kopt.mul %s, %u : tensor<16x14336xbf16>, tensor<16x14336xbf16> -> tensor<16x14336xbf16>
  return %p : tensor<16x14336xbf16>
}

// Numbering continues across functions of the module; each op name has its own
// counter.
// CHECK-LABEL: func.func @numbering(
// CHECK:         kopt.kernel "matmul_2" ins({{.*}}) -> tensor<8x8xf32>
// CHECK-SAME:      attrs = {transpose_a = true, transpose_b = false}, name = "matmul"
// CHECK:         kopt.kernel "matmul_3" ins({{.*}}) -> tensor<8x8xf32>
// CHECK-SAME:      attrs = {transpose_a = true, transpose_b = true}, name = "matmul"
// CHECK:         kopt.kernel "mul_1" ins
// CHECK:         kopt.kernel "add_0" ins({{.*}} : tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
// CHECK-SAME:      attrs = {}, name = "add", params = ["lhs", "rhs", "result"]
// CHECK:         kopt.kernel "sub_0" ins
// CHECK-SAME:      name = "sub", params = ["lhs", "rhs", "result"]
// CHECK:         kopt.kernel "div_0" ins
// CHECK:         kopt.kernel "max_0" ins
// CHECK:         kopt.kernel "min_0" ins
// CHECK:         kopt.kernel "add_1" ins
func.func @numbering(%a: tensor<8x8xf32>, %v: tensor<8xf32>) -> tensor<8x8xf32> {
  %0 = kopt.matmul %a, %a {transpose_a} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = kopt.matmul %0, %a {transpose_a, transpose_b} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %2 = kopt.mul %1, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %3 = kopt.add %2, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %4 = kopt.sub %3, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %5 = kopt.div %4, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %6 = kopt.max %5, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %7 = kopt.min %6, %v : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %8 = kopt.add %7, %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %8 : tensor<8x8xf32>
}

// Unary ops have one parameter "input"; gelu records its approximation.
// CHECK-LABEL: func.func @unary(
// CHECK:         kopt.kernel "exp_0" {{.*}}attrs = {}, name = "exp", params = ["input", "result"]
// CHECK:         kopt.kernel "neg_0" {{.*}}attrs = {}, name = "neg", params = ["input", "result"]
// CHECK:         kopt.kernel "abs_0" {{.*}}attrs = {}, name = "abs", params = ["input", "result"]
// CHECK:         kopt.kernel "sqrt_0" {{.*}}attrs = {}, name = "sqrt", params = ["input", "result"]
// CHECK:         kopt.kernel "rsqrt_0" {{.*}}attrs = {}, name = "rsqrt", params = ["input", "result"]
// CHECK:         kopt.kernel "tanh_0" {{.*}}attrs = {}, name = "tanh", params = ["input", "result"]
// CHECK:         kopt.kernel "log_0" {{.*}}attrs = {}, name = "log", params = ["input", "result"]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4x8xf32>):
// CHECK-NEXT:      kopt.log %{{.*}} : tensor<4x8xf32>
// CHECK:         kopt.kernel "log1p_0" {{.*}}attrs = {}, name = "log1p", params = ["input", "result"]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4x8xf32>):
// CHECK-NEXT:      kopt.log1p %{{.*}} : tensor<4x8xf32>
// CHECK:         kopt.kernel "sigmoid_0" {{.*}}attrs = {}, name = "sigmoid", params = ["input", "result"]
// CHECK:         kopt.kernel "relu_0" {{.*}}attrs = {}, name = "relu", params = ["input", "result"]
// CHECK:         kopt.kernel "gelu_0" {{.*}}attrs = {approximate = "none"}, name = "gelu", params = ["input", "result"]
// CHECK:         kopt.kernel "gelu_1" {{.*}}attrs = {approximate = "tanh"}, name = "gelu", params = ["input", "result"]
// CHECK:         kopt.kernel "cast_0" ins({{.*}} : tensor<4x8xf32>) -> tensor<4x8xbf16> {{.*}}attrs = {}, name = "cast", params = ["input", "result"]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4x8xf32>):
// CHECK-NEXT:      kopt.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %0 = kopt.exp %x : tensor<4x8xf32>
  %1 = kopt.neg %0 : tensor<4x8xf32>
  %2 = kopt.abs %1 : tensor<4x8xf32>
  %3 = kopt.sqrt %2 : tensor<4x8xf32>
  %4 = kopt.rsqrt %3 : tensor<4x8xf32>
  %5 = kopt.tanh %4 : tensor<4x8xf32>
  %l = kopt.log %5 : tensor<4x8xf32>
  %lp = kopt.log1p %l : tensor<4x8xf32>
  %6 = kopt.sigmoid %lp : tensor<4x8xf32>
  %7 = kopt.relu %6 : tensor<4x8xf32>
  %8 = kopt.gelu %7 : tensor<4x8xf32>
  %9 = kopt.gelu %8 approximate(tanh) : tensor<4x8xf32>
  %10 = kopt.cast %9 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %10 : tensor<4x8xbf16>
}

// Row operators: reduce records its kind, the norms their eps and only the
// optional parameters they have.
// CHECK-LABEL: func.func @rows(
// CHECK:         kopt.kernel "reduce_0" ins({{.*}} : tensor<4x8xf32>) -> tensor<4xf32> {{.*}}attrs = {kind = "sum"}, name = "reduce", params = ["input", "result"]
// CHECK:         kopt.kernel "reduce_1" ins({{.*}} : tensor<4x8xf32>) -> tensor<4xbf16> {{.*}}attrs = {kind = "max"}, name = "reduce"
// CHECK:         kopt.kernel "reduce_2" ins({{.*}} : tensor<8xf32>) -> tensor<f32> {{.*}}attrs = {kind = "mean"}, name = "reduce"
// CHECK:         kopt.kernel "softmax_0" {{.*}}attrs = {}, name = "softmax", params = ["input", "result"]
// CHECK:         kopt.kernel "rmsnorm_0" ins({{.*}} : tensor<4x8xf32>) {{.*}}attrs = {eps = 9.99999974E-6 : f32}, name = "rmsnorm", params = ["input", "result"]
// CHECK:         kopt.kernel "rmsnorm_1" ins({{.*}} : tensor<4x8xf32>, tensor<8xf32>) {{.*}}attrs = {eps = 9.99999974E-6 : f32}, name = "rmsnorm", params = ["input", "weight", "result"]
// CHECK:         kopt.kernel "layernorm_0" ins({{.*}} : tensor<4x8xf32>) {{.*}}attrs = {eps = 9.99999996E-13 : f32}, name = "layernorm", params = ["input", "result"]
// CHECK:         kopt.kernel "layernorm_1" ins({{.*}} : tensor<4x8xf32>, tensor<8xf32>) {{.*}}name = "layernorm", params = ["input", "weight", "result"]
// CHECK:         kopt.kernel "layernorm_2" ins({{.*}} : tensor<4x8xf32>, tensor<8xf32>) {{.*}}name = "layernorm", params = ["input", "bias", "result"]
// CHECK:         kopt.kernel "layernorm_3" ins({{.*}} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {{.*}}name = "layernorm", params = ["input", "weight", "bias", "result"]
// CHECK-NEXT:    ^bb0(%[[I:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT:      kopt.layernorm %[[I]] weight(%[[W]] : tensor<8xf32>) bias(%[[B]] : tensor<8xf32>) eps = 9.99999974E-6 : tensor<4x8xf32>
func.func @rows(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<4xf32>, tensor<4xbf16>, tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kopt.reduce sum %x : tensor<4x8xf32> -> tensor<4xf32>
  %1 = kopt.reduce max %x : tensor<4x8xf32> -> tensor<4xbf16>
  %2 = kopt.reduce mean %v : tensor<8xf32> -> tensor<f32>
  %3 = kopt.softmax %x : tensor<4x8xf32>
  %4 = kopt.rmsnorm %x eps = 1.0e-05 : tensor<4x8xf32>
  %5 = kopt.rmsnorm %x weight(%w : tensor<8xf32>) eps = 1.0e-05 : tensor<4x8xf32>
  %6 = kopt.layernorm %x eps = 1.0e-12 : tensor<4x8xf32>
  %7 = kopt.layernorm %x weight(%w : tensor<8xf32>) eps = 1.0e-05 : tensor<4x8xf32>
  %8 = kopt.layernorm %x bias(%b : tensor<8xf32>) eps = 1.0e-05 : tensor<4x8xf32>
  %9 = kopt.layernorm %x weight(%w : tensor<8xf32>) bias(%b : tensor<8xf32>) eps = 1.0e-05 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4xf32>, tensor<4xbf16>, tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
      tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Ops already inside a kernel stay there: the hand-written kernel is kept as it is
// (no source is added) and is not wrapped again.
// CHECK-LABEL: func.func @existing_kernel(
// CHECK:         kopt.kernel "mine" ins(%{{.*}} : tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4xf32>):
// CHECK-NEXT:      kopt.exp
// CHECK-NEXT:      kopt.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    kopt.kernel "exp_1" ins
// CHECK-NOT:     kopt.kernel
// CHECK:         return
func.func @existing_kernel(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kopt.kernel "mine" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.exp %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  %1 = kopt.exp %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// Functions without kopt ops are left alone.
// CHECK-LABEL: func.func @no_kopt(
// CHECK-NEXT:    return %{{.*}} : tensor<4xf32>
func.func @no_kopt(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// kopt ops are pure: dead ones (%d, and %e whose only user is dead) are dropped
// before grouping, so they are neither compiled nor launched.
// CHECK-LABEL: func.func @dead_ops(
// CHECK:         kopt.kernel "exp_
// CHECK-NOT:     kopt.kernel
// CHECK:         return
func.func @dead_ops(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = kopt.exp %x : tensor<4x8xf32>
  %e = kopt.neg %x : tensor<4x8xf32>
  %d = kopt.tanh %e : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// A value returned three times (as --cse leaves equal ops) gets a copy per
// repetition, a cast to its own type, so that each output buffer has its kernel.
// CHECK-LABEL: func.func @returned_twice(
// CHECK:         %[[Y:.*]] = kopt.kernel "exp_{{[0-9]+}}"
// CHECK:         %[[C:.*]] = kopt.kernel "cast_{{[0-9]+}}" ins(%[[Y]] : tensor<4x8xf32>) -> tensor<4x8xf32> {{.*}}name = "cast"
// CHECK:           kopt.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xf32>
// CHECK:         %[[C2:.*]] = kopt.kernel "cast_{{[0-9]+}}" ins(%[[Y]] : tensor<4x8xf32>)
// CHECK:         return %[[Y]], %[[C]], %[[C2]]
func.func @returned_twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = kopt.exp %x : tensor<4x8xf32>
  return %y, %y, %y : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
