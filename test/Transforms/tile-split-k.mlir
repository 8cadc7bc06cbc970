// Split-K (schedule split_k = S > 1) in kopt-tile, for each instruction:
// S times the tile grid; block b computes split b / tiles of tile b % tiles (K
// tiles [s P, (s + 1) P), here P = 4096 / 128 / 4 = 8 for wgmma); a workspace
// parameter (one counter per tile, padded to 32, then S x M x N f32 partials)
// allocated by the host function and marked kopt.workspace; partials stored,
// a gpu-scope fence, a barrier, thread 0's atomic add to the tile's counter,
// barrier.red.or to tell every thread whether the block is the tile's last,
// and in the last block the S partials added in split order.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-split-k4.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// Without wgmma (sm_90), the default is mma_sync:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-split-k4.json chip=sm_90" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile="chip=sm_90" --kopt-pipeline | FileCheck %s --check-prefix=MMA
// The default heuristic splits K for f32 decode with 8 < M <= 64 (M <= 8 is gemv,
// tile-gemv.mlir) (16 x 64 SIMT tiles, up to 16
// splits), for long K on small wgmma grids (64 x 64 tiles, 2 splits), and for
// wgmma decode grids of at most one 64 x 32 tile per SM with 16 K steps per split
// (here 128 tiles, K = 4096: 2 splits, 4 stages; TMA with a producer warp):
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule | FileCheck %s --check-prefix=DEFAULT
// DEFAULT-LABEL: func.func @decode(
// DEFAULT:         copy = tma, block_m = 64, block_n = 32, block_k = 128, {{.*}} stages = 4, split_k = 2, {{.*}} warp_specialize = true
// DEFAULT-LABEL: func.func @f32_decode(
// DEFAULT:         instruction = ffma, {{.*}} block_m = 16, block_n = 64, block_k = 16, {{.*}} split_k = 16,
// DEFAULT-LABEL: func.func @long_k(
// DEFAULT:         instruction = wgmma, {{.*}} block_m = 64, block_n = 64, block_k = 128, {{.*}} stages = 5, split_k = 2,
// PTX that ptxas accepts, and the manifest's workspace parameter and buffer:
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-split-k4.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// 32 x 4096 output, wgmma 64 x 32 tiles: 128 tiles, 512 blocks; workspace
// 128 + 4 x 32 x 4096 = 524416 floats.
// CHECK-LABEL: func.func @decode(
// CHECK:         %[[WS:.*]] = memref.alloc() {kopt.workspace} : memref<524416xf32>
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 blocks in (%{{c512[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}})
// CHECK-SAME:      args(%{{.*}}, %{{.*}}, %{{.*}}, %[[WS]], %{{.*}}, %{{.*}} : memref<32x4096xbf16>, memref<4096x4096xbf16>, memref<32x4096xbf16>, memref<524416xf32>, i64, i64)
// CHECK-SAME:      num_outputs = 1 : i64
// CHECK-SAME:      split_k = 4
// CHECK:         memref.dealloc %[[WS]]
// CHECK:       gpu.func @matmul_0({{.*}}: memref<32x4096xbf16>, {{.*}}: memref<4096x4096xbf16>, {{.*}}: memref<32x4096xbf16>, %[[W:.*]]: memref<524416xf32>, %{{.*}}: i64, %{{.*}}: i64)
// CHECK:         %[[BID:.*]] = gpu.block_id x
// CHECK-DAG:     arith.remui %[[BID]], %{{c128[_0-9]*}}
// CHECK-DAG:     %[[SPLIT:.*]] = arith.divui %[[BID]], %{{c128[_0-9]*}}
// CHECK:         arith.muli %[[SPLIT]], %{{c1024[_0-9]*}}
// (TMA: min(8, the split's K tiles that start inside K) loads; the consumers
// of a warp-specialized kernel sync their 128 threads only.)
// CHECK:         arith.minui %{{.*}}, %{{c8[_0-9]*}} : index
// CHECK:         scf.for
// CHECK:           nvvm.wgmma.mma_async
// CHECK:         vector.store %{{.*}}, %[[W]]
// CHECK:         nvvm.memory.barrier <gpu>
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    nvvm.barrier id = %{{.*}} number_of_threads = %{{c128_i32[_0-9]*}}
// CHECK:         memref.atomic_rmw addf %{{.*}}, %[[W]]
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.or.aligned.count"
// CHECK:         scf.if
// CHECK-NEXT:      nvvm.memory.barrier <gpu>
// CHECK:           vector.load %[[W]]
// CHECK:           vector.load %[[W]]
// CHECK:           vector.load %[[W]]
// CHECK:           vector.load %[[W]]
// CHECK:           arith.addf
// CHECK:           vector.store %{{.*}} : memref<32x4096xbf16>
// MMA-LABEL: func.func @decode(
// MMA:         split_k = 4
// MMA:       gpu.func @matmul_0(
// MMA-SAME:      memref<{{[0-9]+}}xf32>
// MMA:         nvvm.mma.sync
// MMA:         memref.atomic_rmw addf
// JSON:      "name": "workspace",
// JSON-NEXT: "role": "workspace",
// JSON-NEXT: "dtype": "f32",
// JSON-NEXT: "shape": [
// JSON-NEXT:   524416
// JSON:      "buffers": [
// JSON-NEXT:   {
// JSON-NEXT:     "id": 0,
// JSON-NEXT:     "dtype": "f32",
// JSON-NEXT:     "shape": [
// JSON-NEXT:       524416
// JSON-NEXT:     ],
// JSON-NEXT:     "role": "workspace"
func.func @decode(%x: tensor<32x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<32x4096xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<32x4096xbf16>, tensor<4096x4096xbf16> -> tensor<32x4096xbf16>
  return %y : tensor<32x4096xbf16>
}

// -----

// FFMA (f32): the SIMT loop's K offset comes from the split as well.
// CHECK-LABEL: func.func @f32_decode(
// CHECK:         memref.alloc() {kopt.workspace}
// CHECK:       gpu.func @matmul_0(
// CHECK-SAME:      memref<{{[0-9]+}}xf32>)
// CHECK:         scf.for
// CHECK:           arith.addi %{{.*}}, %{{.*}} : index
// CHECK:         memref.atomic_rmw addf
// MMA-LABEL: func.func @f32_decode(
func.func @f32_decode(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<16x4096xf32> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<16x4096xf32>, tensor<4096x4096xf32> -> tensor<16x4096xf32>
  return %y : tensor<16x4096xf32>
}

// -----

// MMA-LABEL: func.func @long_k(
func.func @long_k(%x: tensor<32x14336xbf16>, %w: tensor<4096x14336xbf16>) -> tensor<32x4096xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<32x14336xbf16>, tensor<4096x14336xbf16> -> tensor<32x4096xbf16>
  return %y : tensor<32x4096xbf16>
}
