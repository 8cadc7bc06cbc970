// kopt-tile on matmul kernels with a fused epilogue chain (kopt-fuse): tiling
// tiles the contraction and its rounding; the chain stays over the whole
// [M, N] after the block tiles, and the builder applies it to each element as it
// stores C, loading the chain's kernel-argument inputs (a bias row, a residual)
// at the element's (m, n), a vector for a lane's adjacent columns: clamped
// inside C in the staged epilogue, whose tile runs past C's edge, and inside
// the bounds check when storing from registers.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | FileCheck %s --check-prefix=TILED
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// The tiled form builds as the untiled kernel does.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | kopt-opt -split-input-file --kopt-tile --kopt-pipeline > %t.two-steps.mlir
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline > %t.one-step.mlir
// RUN: diff %t.two-steps.mlir %t.one-step.mlir
// RUN: kopt-opt %s -split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// bf16 wgmma with the staged epilogue; N = 1000 is not a multiple of the block
// tile: the bias loads of the staged elements (a lane's pair of columns, one
// 4-byte vector load, N being even) are clamped to (99, 998).
// TILED-LABEL: gpu.func @matmul_add_silu_0(
// TILED:         %[[T:.*]] = scf.forall
// TILED:         %[[A:.*]] = linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<100x1000xbf16>, tensor<1000xbf16>)
// TILED:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<100x1000xbf16>)
// TILED:         kopt.yield %[[S]]
// CHECK-LABEL: gpu.func @matmul_add_silu_0(
// CHECK-SAME:    %{{.*}}: memref<100x256xbf16>, %{{.*}}: memref<1000x256xbf16>, %[[B:.*]]: memref<1000xbf16>, %{{.*}}: memref<100x1000xbf16>
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         arith.minui %{{.*}}, %c99{{(_[0-9]+)?}} : index
// CHECK:         %[[N:.*]] = arith.minui %{{.*}}, %c998{{(_[0-9]+)?}} : index
// CHECK-NEXT:    vector.load %[[B]][%[[N]]] {alignment = 4 : i64} : memref<1000xbf16>, vector<2xbf16>
// CHECK:         arith.addf
// CHECK:         math.exp
// CHECK:         vector.store %{{.*}}, %{{.*}} : memref<64x40xbf16, 3>, vector<2xbf16>
func.func @staged(%x: tensor<100x256xbf16>, %w: tensor<1000x256xbf16>, %b: tensor<1000xbf16>) -> tensor<100x1000xbf16> {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<100x256xbf16>, tensor<1000x256xbf16> -> tensor<100x1000xbf16>
  %a = kopt.add %m, %b : tensor<100x1000xbf16>, tensor<1000xbf16> -> tensor<100x1000xbf16>
  %g = kopt.silu %a : tensor<100x1000xbf16>
  return %g : tensor<100x1000xbf16>
}

// -----

// Exact f32 (FFMA, stores from registers): the residual is loaded at (m, n)
// inside the bounds check, no clamp; no rounding epilogue (f32 C).
// CHECK-LABEL: gpu.func @matmul_add_0(
// CHECK-SAME:    %{{.*}}: memref<24x64xf32>, %{{.*}}: memref<64x130xf32>, %[[H:.*]]: memref<24x130xf32>, %[[O:.*]]: memref<24x130xf32>)
// CHECK:         scf.if
// CHECK-NOT:       arith.minui
// CHECK:           %[[R:.*]] = memref.load %[[H]][%[[M:.*]], %[[N:.*]]] : memref<24x130xf32>
// CHECK:           arith.addf %[[R]], %{{.*}} : f32
// CHECK:           memref.store %{{.*}}, %[[O]][%[[M]], %[[N]]] : memref<24x130xf32>
func.func @residual_f32(%x: tensor<24x64xf32>, %w: tensor<64x130xf32>, %h: tensor<24x130xf32>) -> tensor<24x130xf32> {
  %m = kopt.matmul %x, %w : tensor<24x64xf32>, tensor<64x130xf32> -> tensor<24x130xf32>
  %y = kopt.add %h, %m : tensor<24x130xf32>, tensor<24x130xf32> -> tensor<24x130xf32>
  return %y : tensor<24x130xf32>
}
