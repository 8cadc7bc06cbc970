// gemv schedules (instruction = gemv) in kopt-tile: the default for
// M = 1 with 16-bit operands and M <= 8 with f32 operands, both contiguous along
// K. Warps own warp_n output columns; lane l reads block_k elements of each of
// its warp's B rows and of the A rows at k0 + l * block_k per K step of
// 32 * block_k, as 16-byte loads (rows clamped inside the operand, elements past
// K selected to zero), multiply-accumulates in f32, and after the K loop the warp
// adds its lanes' sums with a shuffle butterfly; lane (r * warp_n + j) % 32
// stores output (r, j).
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// Split-K: partial sums through the workspace, as for the other instructions.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-split-k2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s --check-prefix=SPLIT
// PTX that ptxas accepts:
// RUN: rm -f %t.ptx %t.json %t-s.ptx
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-s.ptx" --kopt-schedule=%S/Inputs/schedule-split-k2.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-s.ptx -o %t-s.cubin

// 1 x 1000 x 4096 bf16: 16-column blocks of 8 warps (2 columns each):
// ceil(1000 / 16) = 63 blocks of 256 threads; K steps of 32 x 16 = 512.
// CHECK-LABEL: func.func @decode(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 blocks in (%{{c63[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}}) threads in (%{{c256[_0-9]*}},
// CHECK-SAME:      instruction = gemv, copy = sync, block_m = 16, block_n = 16, block_k = 16, warp_m = 16, warp_n = 2, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false
// CHECK:       gpu.func @matmul_0(%[[A:.*]]: memref<1x4096xbf16>, %[[B:.*]]: memref<1000x4096xbf16>, %[[C:.*]]: memref<1x1000xbf16>)
// CHECK-NOT:     memref.view
// Rows clamped inside A (M = 1) and B (N = 1000).
// CHECK:         arith.minui %{{.*}}, %{{c0[_0-9]*}} : index
// CHECK:         arith.minui %{{.*}}, %{{c999[_0-9]*}} : index
// CHECK:         arith.minui %{{.*}}, %{{c999[_0-9]*}} : index
// CHECK:         %{{.*}}:2 = scf.for %{{.*}} = %{{.*}} to %{{c8[_0-9]*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
// CHECK:           %[[INK:.*]] = arith.cmpi ult, %{{.*}}, %{{c4096[_0-9]*}} : index
// CHECK:           %[[V:.*]] = vector.load %[[B]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1000x4096xbf16>, vector<8xbf16>
// CHECK-NEXT:      arith.select %[[INK]], %[[V]], %{{.*}} : vector<8xbf16>
// CHECK:           vector.load %[[B]]
// CHECK:           vector.load %[[A]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x4096xbf16>, vector<8xbf16>
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:           math.fma
// CHECK:         scf.yield
// CHECK:         gpu.shuffle  xor %{{.*}}, %{{c16_i32[_0-9]*}}, %{{c32_i32[_0-9]*}} : f32
// CHECK:         gpu.shuffle  xor %{{.*}}, %{{c1_i32[_0-9]*}}, %{{c32_i32[_0-9]*}} : f32
// Output (0, 1) belongs to lane 1.
// CHECK:         arith.cmpi eq, %{{.*}}, %{{c1[_0-9]*}} : index
// CHECK-NEXT:    scf.if
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           memref.store %{{.*}}, %[[C]]
// SPLIT-LABEL: func.func @decode(
// SPLIT:         split_k = 2
// SPLIT:       gpu.func @matmul_0(
// SPLIT:         scf.for %{{.*}} = %{{.*}} to %{{c4[_0-9]*}} step
// SPLIT:         memref.atomic_rmw addf
// JSON:      "class": "matmul",
// JSON:      "instruction": "gemv",
func.func @decode(%x: tensor<1x4096xbf16>, %w: tensor<1000x4096xbf16>) -> tensor<1x1000xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<1x4096xbf16>, tensor<1000x4096xbf16> -> tensor<1x1000xbf16>
  return %y : tensor<1x1000xbf16>
}

// -----

// 8 x 4096 x 4096 f32: 8 x 4 accumulators per lane, K steps of 32 x 8 (two
// 16-byte loads of 4 floats per row).
// CHECK-LABEL: func.func @decode_f32(
// CHECK:         instruction = gemv, {{.*}}block_k = 8, warp_m = 16, warp_n = 4,
// CHECK:       gpu.func @matmul_0(
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{c16[_0-9]*}} step %{{.*}} iter_args({{.*}}) -> ({{(f32, ){31}f32}}) {
// CHECK-COUNT-24:  vector.load {{.*}} vector<4xf32>
// CHECK-NOT:       vector.load
// CHECK:         scf.yield
func.func @decode_f32(%x: tensor<8x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<8x4096xf32> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<8x4096xf32>, tensor<4096x4096xf32> -> tensor<8x4096xf32>
  return %y : tensor<8x4096xf32>
}

// -----

// M = 2 with 16-bit operands, and a row-major B, keep their tensor-core defaults.
// CHECK-LABEL: func.func @two_rows(
// CHECK:         instruction = wgmma
// CHECK-LABEL: func.func @row_major_b(
// CHECK:         instruction = mma_sync
func.func @two_rows(%x: tensor<2x4096xbf16>, %w: tensor<1000x4096xbf16>) -> tensor<2x1000xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<2x4096xbf16>, tensor<1000x4096xbf16> -> tensor<2x1000xbf16>
  return %y : tensor<2x1000xbf16>
}
func.func @row_major_b(%x: tensor<1x4096xbf16>, %w: tensor<4096x1000xbf16>) -> tensor<1x1000xbf16> {
  %y = kopt.matmul %x, %w : tensor<1x4096xbf16>, tensor<4096x1000xbf16> -> tensor<1x1000xbf16>
  return %y : tensor<1x1000xbf16>
}
