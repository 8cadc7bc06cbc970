// Round trip of every kopt op and form: parse, print, parse the printed form again.
// RUN: kopt-opt %s | kopt-opt | FileCheck %s
// The generic form must round-trip too.
// RUN: kopt-opt %s --mlir-print-op-generic | kopt-opt | FileCheck %s

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_plain(
// CHECK-SAME:    %[[A:.*]]: tensor<16x64xf32>, %[[B:.*]]: tensor<64x32xf32>
// CHECK:         %[[C:.*]] = kopt.matmul %[[A]], %[[B]] : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    return %[[C]]
func.func @matmul_plain(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %c = kopt.matmul %a, %b : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_a(
// CHECK:         kopt.matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<64x16xf16>, tensor<64x32xf16> -> tensor<16x32xf32>
func.func @matmul_transpose_a(%a: tensor<64x16xf16>, %b: tensor<64x32xf16>) -> tensor<16x32xf32> {
  %c = kopt.matmul %a, %b {transpose_a} : tensor<64x16xf16>, tensor<64x32xf16> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_b(
// CHECK:         kopt.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
func.func @matmul_transpose_b(%x: tensor<16x4096xbf16>, %w: tensor<14336x4096xbf16>) -> tensor<16x14336xbf16> {
  %c = kopt.matmul %x, %w {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  return %c : tensor<16x14336xbf16>
}

// CHECK-LABEL: func.func @matmul_transpose_both(
// CHECK:         kopt.matmul %{{.*}}, %{{.*}} {transpose_a, transpose_b} : tensor<64x16xbf16>, tensor<32x64xbf16> -> tensor<16x32xf16>
func.func @matmul_transpose_both(%a: tensor<64x16xbf16>, %b: tensor<32x64xbf16>) -> tensor<16x32xf16> {
  %c = kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<64x16xbf16>, tensor<32x64xbf16> -> tensor<16x32xf16>
  return %c : tensor<16x32xf16>
}

// CHECK-LABEL: func.func @matmul_tf32(
// CHECK:         kopt.matmul %{{.*}}, %{{.*}} {tf32, transpose_b} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
func.func @matmul_tf32(%a: tensor<16x64xf32>, %b: tensor<32x64xf32>) -> tensor<16x32xf32> {
  %c = kopt.matmul %a, %b {transpose_b, tf32} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops, with and without broadcasting
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xf32>, %[[ROW:[^:]*]]: tensor<8xf32>, %[[COL:[^:]*]]: tensor<4x1xf32>, %[[S:[^:]*]]: tensor<f32>, %[[ONE:[^:]*]]: tensor<1x8xf32>, %[[U:[^:]*]]: tensor<2x1x8xf16>, %[[V:[^:]*]]: tensor<3x1xf16>
// CHECK:         kopt.add %[[X]], %[[X]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    kopt.sub %[[X]], %[[ROW]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    kopt.mul %[[COL]], %[[X]] : tensor<4x1xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    kopt.div %[[X]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK-NEXT:    kopt.max %[[COL]], %[[ONE]] : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    kopt.min %[[U]], %[[V]] : tensor<2x1x8xf16>, tensor<3x1xf16> -> tensor<2x3x8xf16>
// CHECK-NEXT:    kopt.add %[[S]], %[[S]] : tensor<f32>, tensor<f32> -> tensor<f32>
func.func @binary(%x: tensor<4x8xf32>, %row: tensor<8xf32>, %col: tensor<4x1xf32>,
                  %s: tensor<f32>, %one: tensor<1x8xf32>, %u: tensor<2x1x8xf16>,
                  %v: tensor<3x1xf16>) {
  %0 = kopt.add %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = kopt.sub %x, %row : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = kopt.mul %col, %x : tensor<4x1xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = kopt.div %x, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %4 = kopt.max %col, %one : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %5 = kopt.min %u, %v : tensor<2x1x8xf16>, tensor<3x1xf16> -> tensor<2x3x8xf16>
  %6 = kopt.add %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xf32>, %[[H:[^:]*]]: tensor<16xf16>, %[[B:[^:]*]]: tensor<2x3x4xbf16>
// CHECK:         kopt.exp %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    kopt.neg %[[H]] : tensor<16xf16>
// CHECK-NEXT:    kopt.abs %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    kopt.sqrt %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    kopt.rsqrt %[[H]] : tensor<16xf16>
// CHECK-NEXT:    kopt.tanh %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    kopt.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    kopt.relu %[[H]] : tensor<16xf16>
// CHECK-NEXT:    kopt.silu %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    kopt.log %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    kopt.log1p %[[H]] : tensor<16xf16>
// CHECK-NEXT:    kopt.log %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    kopt.log1p %[[B]] : tensor<2x3x4xbf16>
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<16xf16>, %b: tensor<2x3x4xbf16>) {
  %0 = kopt.exp %x : tensor<4x8xf32>
  %1 = kopt.neg %h : tensor<16xf16>
  %2 = kopt.abs %b : tensor<2x3x4xbf16>
  %3 = kopt.sqrt %x : tensor<4x8xf32>
  %4 = kopt.rsqrt %h : tensor<16xf16>
  %5 = kopt.tanh %b : tensor<2x3x4xbf16>
  %6 = kopt.sigmoid %x : tensor<4x8xf32>
  %7 = kopt.relu %h : tensor<16xf16>
  %8 = kopt.silu %b : tensor<2x3x4xbf16>
  %9 = kopt.log %x : tensor<4x8xf32>
  %10 = kopt.log1p %h : tensor<16xf16>
  %11 = kopt.log %b : tensor<2x3x4xbf16>
  %12 = kopt.log1p %b : tensor<2x3x4xbf16>
  return
}

// `approximate(none)` is the default and is not printed.
// CHECK-LABEL: func.func @gelu(
// CHECK:         kopt.gelu %{{.*}} : tensor<4x8xf32>
// CHECK-NEXT:    kopt.gelu %{{.*}} : tensor<4x8xf32>
// CHECK-NEXT:    kopt.gelu %{{.*}} approximate(tanh) : tensor<4x8xbf16>
func.func @gelu(%x: tensor<4x8xf32>, %y: tensor<4x8xbf16>) {
  %0 = kopt.gelu %x : tensor<4x8xf32>
  %1 = kopt.gelu %x approximate(none) : tensor<4x8xf32>
  %2 = kopt.gelu %y approximate(tanh) : tensor<4x8xbf16>
  return
}

// CHECK-LABEL: func.func @cast(
// CHECK:         kopt.cast %{{.*}} : tensor<8x128256xf32> to tensor<8x128256xbf16>
// CHECK-NEXT:    kopt.cast %{{.*}} : tensor<8x128256xbf16> to tensor<8x128256xf16>
// CHECK-NEXT:    kopt.cast %{{.*}} : tensor<8x128256xf16> to tensor<8x128256xf32>
// CHECK-NEXT:    kopt.cast %{{.*}} : tensor<8x128256xf32> to tensor<8x128256xf32>
func.func @cast(%x: tensor<8x128256xf32>) {
  %0 = kopt.cast %x : tensor<8x128256xf32> to tensor<8x128256xbf16>
  %1 = kopt.cast %0 : tensor<8x128256xbf16> to tensor<8x128256xf16>
  %2 = kopt.cast %1 : tensor<8x128256xf16> to tensor<8x128256xf32>
  %3 = kopt.cast %2 : tensor<8x128256xf32> to tensor<8x128256xf32>
  return
}

//===----------------------------------------------------------------------===//
// Row operators
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce(
// CHECK:         kopt.reduce sum %{{.*}} : tensor<8x128256xf32> -> tensor<8xf32>
// CHECK-NEXT:    kopt.reduce max %{{.*}} : tensor<8x128256xf32> -> tensor<8xbf16>
// CHECK-NEXT:    kopt.reduce mean %{{.*}} : tensor<2x3x4xbf16> -> tensor<2x3xf32>
// CHECK-NEXT:    kopt.reduce mean %{{.*}} : tensor<4096xf16> -> tensor<f16>
// CHECK-NEXT:    kopt.reduce max %{{.*}} : tensor<4096xf16> -> tensor<f32>
func.func @reduce(%x: tensor<8x128256xf32>, %y: tensor<2x3x4xbf16>, %v: tensor<4096xf16>) {
  %0 = kopt.reduce sum %x : tensor<8x128256xf32> -> tensor<8xf32>
  %1 = kopt.reduce max %x : tensor<8x128256xf32> -> tensor<8xbf16>
  %2 = kopt.reduce mean %y : tensor<2x3x4xbf16> -> tensor<2x3xf32>
  %3 = kopt.reduce mean %v : tensor<4096xf16> -> tensor<f16>
  %4 = kopt.reduce max %v : tensor<4096xf16> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @softmax(
// CHECK:         kopt.softmax %{{.*}} : tensor<512x2048xf32>
// CHECK-NEXT:    kopt.softmax %{{.*}} : tensor<2x32x16x16xbf16>
func.func @softmax(%x: tensor<512x2048xf32>, %y: tensor<2x32x16x16xbf16>) {
  %0 = kopt.softmax %x : tensor<512x2048xf32>
  %1 = kopt.softmax %y : tensor<2x32x16x16xbf16>
  return
}

// CHECK-LABEL: func.func @rmsnorm(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<16x4096xbf16>, %[[W:[^:]*]]: tensor<4096xbf16>
// CHECK:         kopt.rmsnorm %[[X]] weight(%[[W]] : tensor<4096xbf16>) eps = 9.99999974E-6 : tensor<16x4096xbf16>
// CHECK-NEXT:    kopt.rmsnorm %[[X]] eps = 9.99999997E-7 : tensor<16x4096xbf16>
// CHECK-NEXT:    kopt.rmsnorm %{{.*}} eps = 0.000000e+00 : tensor<128xf32>
func.func @rmsnorm(%x: tensor<16x4096xbf16>, %w: tensor<4096xbf16>, %v: tensor<128xf32>) {
  %0 = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  %1 = kopt.rmsnorm %x eps = 1.0e-06 : tensor<16x4096xbf16>
  %2 = kopt.rmsnorm %v eps = 0.0 : tensor<128xf32>
  return
}

// CHECK-LABEL: func.func @layernorm(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<8x1024xf16>, %[[W:[^:]*]]: tensor<1024xf16>, %[[B:[^:]*]]: tensor<1024xf16>
// CHECK:         kopt.layernorm %[[X]] eps = 9.99999974E-6 : tensor<8x1024xf16>
// CHECK-NEXT:    kopt.layernorm %[[X]] weight(%[[W]] : tensor<1024xf16>) eps = 9.99999974E-6 : tensor<8x1024xf16>
// CHECK-NEXT:    kopt.layernorm %[[X]] bias(%[[B]] : tensor<1024xf16>) eps = 9.99999974E-6 : tensor<8x1024xf16>
// CHECK-NEXT:    kopt.layernorm %[[X]] weight(%[[W]] : tensor<1024xf16>) bias(%[[B]] : tensor<1024xf16>) eps = 9.99999996E-13 : tensor<8x1024xf16>
func.func @layernorm(%x: tensor<8x1024xf16>, %w: tensor<1024xf16>, %b: tensor<1024xf16>) {
  %0 = kopt.layernorm %x eps = 1.0e-05 : tensor<8x1024xf16>
  %1 = kopt.layernorm %x weight(%w : tensor<1024xf16>) eps = 1.0e-05 : tensor<8x1024xf16>
  %2 = kopt.layernorm %x bias(%b : tensor<1024xf16>) eps = 1.0e-05 : tensor<8x1024xf16>
  %3 = kopt.layernorm %x weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>) eps = 1.0e-12 : tensor<8x1024xf16>
  return
}

//===----------------------------------------------------------------------===//
// kopt.kernel and kopt.yield
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @kernels(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>
// CHECK:         %[[K:.*]] = kopt.kernel "add_0" ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> attributes {source = {attrs = {}, name = "add", params = ["lhs", "rhs", "result"]}} {
// CHECK-NEXT:    ^bb0(%[[A0:.*]]: tensor<4x8xf32>, %[[A1:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[S:.*]] = kopt.add %[[A0]], %[[A1]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      kopt.yield %[[S]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// A kernel with two results and no source.
// CHECK-NEXT:    %[[K2:.*]]:2 = kopt.kernel "pair" ins(%[[K]] : tensor<4x8xf32>) -> tensor<4x8xf32>, tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[B0:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[E:.*]] = kopt.exp %[[B0]] : tensor<4x8xf32>
// CHECK-NEXT:      %[[R:.*]] = kopt.reduce sum %[[E]] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:      kopt.yield %[[E]], %[[R]] : tensor<4x8xf32>, tensor<4xf32>
// CHECK-NEXT:    }
// A kernel with neither inputs nor results: its yield is implicit and not printed.
// CHECK-NEXT:    kopt.kernel "empty" {
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[K2]]#0, %[[K2]]#1
func.func @kernels(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %0 = kopt.kernel "add_0" ins(%x, %w : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      attributes {source = {attrs = {}, name = "add", params = ["lhs", "rhs", "result"]}} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    %s = kopt.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    kopt.yield %s : tensor<4x8xf32>
  }
  %1:2 = kopt.kernel "pair" ins(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>, tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %e = kopt.exp %a : tensor<4x8xf32>
    %r = kopt.reduce sum %e : tensor<4x8xf32> -> tensor<4xf32>
    kopt.yield %e, %r : tensor<4x8xf32>, tensor<4xf32>
  }
  kopt.kernel "empty" {
  }
  return %1#0, %1#1 : tensor<4x8xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @pack(
// CHECK:         kopt.pack %{{.*}} : tensor<4097x4093xbf16> -> tensor<4097x4096xbf16>
// CHECK-NEXT:    kopt.pack %{{.*}} {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4096xbf16>
// CHECK-NEXT:    kopt.pack %{{.*}} {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4093xbf16>
func.func @pack(%a: tensor<4097x4093xbf16>, %b: tensor<4093x4095xbf16>) -> (tensor<4097x4096xbf16>, tensor<4095x4096xbf16>, tensor<4095x4093xbf16>) {
  %0 = kopt.pack %a : tensor<4097x4093xbf16> -> tensor<4097x4096xbf16>
  %1 = kopt.pack %b {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4096xbf16>
  %2 = kopt.pack %b {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4093xbf16>
  return %0, %1, %2 : tensor<4097x4096xbf16>, tensor<4095x4096xbf16>, tensor<4095x4093xbf16>
}
