// kopt-pipeline: kopt-tile leaves a tensor-core matmul's K loop as a
// kopt.mainloop (the staged tiles as block arguments, one K tile's ldmatrix +
// mma.sync as its body); kopt-pipeline expands it as the schedule's copy and
// stages say. Here cp.async with 2 stages (checks TILE before, PIPE after), and a
// hand-written mainloop with synchronous copies (SYNC).
// (TMA rings: pipeline-tma.mlir; producer warps: pipeline-warp-specialize.mlir;
// persistent grids: pipeline-persistent.mlir; diagnostics: pipeline-invalid.mlir.)
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-mma-stages2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s --check-prefix=TILE
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-mma-stages2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: kopt-opt %S/Inputs/mainloop-sync.mlir --kopt-pipeline | FileCheck %s --check-prefix=SYNC
// The tiled kernel parses back as it prints.
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-mma-stages2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | kopt-opt -o /dev/null

// 64 x 64 block tiles of 4 warps (32 x 32 each: 2 x 4 mma tiles, 32 f32
// accumulators per thread), K = 64 in 2 K tiles of 32.
// TILE-LABEL: gpu.func @matmul_0(
// TILE-NOT:     nvgpu.device_async_copy
// TILE:         %{{.*}}:32 = kopt.mainloop %arg0, %arg1 tile(%{{.*}}, %{{.*}}) k_tiles %{{.*}} iter_args({{.*}} : [[F32X32:(f32, ){31}f32]])
// TILE-SAME:      schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2
// TILE-SAME:      : memref<100x64xbf16>, memref<200x64xbf16> ->
// TILE-NEXT:    ^bb0(%[[TA:.*]]: memref<64x40xbf16, 3>, %[[TB:.*]]: memref<64x40xbf16, 3>,
// TILE:           nvgpu.ldmatrix %[[TA]]
// TILE:           nvgpu.ldmatrix %[[TB]]
// TILE-COUNT-16:  nvvm.mma.sync
// TILE:           kopt.yield
// TILE-NOT:     nvgpu.device_async_copy
// TILE:         gpu.return

// One group in flight before the loop (stages - 1); iteration kt issues tile
// kt + 1 into stage (kt + 1) % 2, waits until one group is pending (tile kt
// landed), and runs the body on views of stage kt % 2 between two barriers.
// PIPE-LABEL: gpu.func @matmul_0(
// PIPE-NOT:     kopt.mainloop
// PIPE:         memref.view %{{.*}}[%{{.*}}][] : memref<0xi8, 3> to memref<2x64x40xbf16, 3>
// PIPE:         memref.view %{{.*}}[%{{.*}}][] : memref<0xi8, 3> to memref<2x64x40xbf16, 3>
// PIPE:         nvgpu.device_async_copy %arg0
// PIPE:         nvgpu.device_async_copy %arg1
// PIPE:         nvgpu.device_async_create_group
// PIPE:         scf.for %[[KT:.*]] = %{{.*}} to %{{c2[_0-9]*}} step %{{.*}} iter_args
// PIPE:           arith.addi %[[KT]], %{{c1[_0-9]*}}
// PIPE:           nvgpu.device_async_copy %arg0
// PIPE:           nvgpu.device_async_create_group
// PIPE-NEXT:      nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// PIPE:           %[[STAGE:.*]] = arith.remui %[[KT]], %{{c2[_0-9]*}}
// PIPE-NEXT:      gpu.barrier
// PIPE:           arith.muli %[[STAGE]], %{{c5120[_0-9]*}}
// PIPE:           %[[VA:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<0xi8, 3> to memref<64x40xbf16, 3>
// PIPE:           nvgpu.ldmatrix %[[VA]]
// PIPE-COUNT-16:  nvvm.mma.sync
// PIPE:           gpu.barrier
// PIPE-NEXT:      scf.yield
// PIPE-NOT:     kopt.mainloop
// PIPE:         gpu.return

// Synchronous copies into one buffer per operand, the loads guarded by the
// operands' bounds: A (70 x 40, contiguous along K) in 16-byte chunks, B (stored
// [K, N] = 40 x 90) element by element; a barrier, the body on the buffers, a
// barrier.
// SYNC-LABEL: gpu.func @mainloop(
// SYNC:         %[[A:.*]] = memref.view %{{.*}}[%{{c0[_0-9]*}}][] : memref<0xi8, 3> to memref<64x40xf16, 3>
// SYNC:         %[[B:.*]] = memref.view %{{.*}}[%{{c5120[_0-9]*}}][] : memref<0xi8, 3> to memref<64x40xf16, 3>
// SYNC:         %[[R:.*]] = scf.for %{{.*}} = %{{.*}} to %{{c2[_0-9]*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// SYNC:           arith.cmpi ult, %{{.*}}, %{{c70[_0-9]*}}
// SYNC:           vector.load %arg0
// SYNC:           vector.store %{{.*}}, %[[A]]
// SYNC:           arith.cmpi ult, %{{.*}}, %{{c90[_0-9]*}}
// SYNC:           memref.load %arg1
// SYNC:           memref.store %{{.*}}, %[[B]]
// SYNC:           gpu.barrier
// SYNC:           %[[X:.*]] = memref.load %{{.*}}[%{{c0[_0-9]*}}, %{{c0[_0-9]*}}] : memref<64x40xf16, 3>
// SYNC:           arith.extf %[[X]]
// SYNC:           arith.addf
// SYNC:           gpu.barrier
// SYNC-NEXT:      scf.yield
// SYNC:         memref.store %[[R]], %arg2
func.func @gemm(%a: tensor<100x64xbf16>, %b: tensor<200x64xbf16>) -> tensor<100x200xbf16> {
  %c = kopt.matmul %a, %b {transpose_b} : tensor<100x64xbf16>, tensor<200x64xbf16> -> tensor<100x200xbf16>
  return %c : tensor<100x200xbf16>
}
