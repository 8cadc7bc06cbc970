// kopt-tile (with kopt-pipeline for the K loops) applies each matmul kernel's #kopt.schedule: block and warp
// tiles, the number of cp.async stages, grouped rasterization (swizzle), paired
// epilogue stores (vector_width = 2), SIMT tiles for ffma, and the dynamic shared
// memory the launch passes.

// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-stages3.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=STAGES3
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ffma.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=FFMA
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-wgmma-ok.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=WGMMA
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.wgmma.ptx" --kopt-schedule=%S/Inputs/schedule-wgmma-ok.json -o /dev/null
// RUN: FileCheck %s --check-prefix=WGMMAPTX < %t.wgmma.ptx
// RUN: %ptxas -arch=sm_90a %t.wgmma.ptx -o %t.wgmma.cubin
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ffma-partial.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=PARTIAL
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ffma-stages2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=FFMA2
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ffma2.ptx" --kopt-schedule=%S/Inputs/schedule-ffma-stages2.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ffma2.ptx -o %t.ffma2.cubin
// The IR after each stage parses again.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-stages3.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | kopt-opt -split-input-file -o /dev/null

// 64 x 128 block tiles of 4 warps (2 x 2 warps of 32 x 64), K step 64, three
// stages: [3][64][72] and [3][128][72] bf16 tiles, 82944 bytes of dynamic shared
// memory; ceil(1000 / 64) * ceil(1000 / 128) = 16 * 8 = 128 blocks.
// STAGES3-LABEL: func.func @gemm(
// STAGES3:         kopt.launch @kopt_kernels::@matmul_0
// STAGES3-SAME:      blocks in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// STAGES3-SAME:      threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// STAGES3-SAME:      dynamic_shared_memory_size %c82944_i32
// STAGES3-SAME:      schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 128, block_k = 64, warp_m = 32, warp_n = 64, stages = 3, split_k = 1, swizzle = 4, vector_width = 2, persistent = false>
// STAGES3:         %[[SMEM:.*]] = memref.get_global @kopt_dynamic_smem
// Grouped rasterization: groups of 4 tile rows (of 16), fewer in the last group.
// STAGES3:         %[[TILE:.*]] = gpu.block_id x
// STAGES3:         %[[GROUP:.*]] = arith.divui %[[TILE]], %c32{{(_[0-9]+)?}}
// STAGES3:         %[[FIRST:.*]] = arith.muli %[[GROUP]], %c4{{(_[0-9]+)?}}
// STAGES3:         %[[LEFT:.*]] = arith.subi %c16{{(_[0-9]+)?}}, %[[FIRST]]
// STAGES3:         arith.minsi %[[LEFT]], %c4{{(_[0-9]+)?}}
// kopt-pipeline's ring of 3 stages per operand (after the tile origin).
// STAGES3:         memref.view %{{[0-9a-z_]+}}[%c0{{(_[0-9]+)?}}][] : memref<0xi8, 3> to memref<3x64x72xbf16, 3>
// STAGES3:         memref.view %{{[0-9a-z_]+}}[%c27648{{(_[0-9]+)?}}][] : memref<0xi8, 3> to memref<3x128x72xbf16, 3>
// Prologue: two groups (tiles 0 and 1) in flight.
// STAGES3:         nvgpu.device_async_create_group
// STAGES3:         nvgpu.device_async_create_group
// STAGES3:         scf.for {{.*}} = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} iter_args
// Tile kt + 2 into stage (kt + 2) % 3, then wait until at most two groups pend.
// STAGES3:           arith.addi %{{.*}}, %c2{{(_[0-9]+)?}}
// STAGES3:           arith.remui %{{.*}}, %c3{{(_[0-9]+)?}}
// STAGES3:           nvgpu.device_async_create_group
// STAGES3-NEXT:      nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// STAGES3:           gpu.barrier
// The body reads stage kt % 3 through views of it.
// STAGES3:           memref.view %{{.*}}[%{{.*}}][] : memref<0xi8, 3> to memref<64x72xbf16, 3>
// STAGES3:           nvgpu.ldmatrix {{.*}} : memref<64x72xbf16, 3> -> vector<4x2xbf16>
// 2 x 8 mma tiles per warp, 4 K steps of 16 per tile.
// STAGES3-COUNT-64:  nvvm.mma.sync
// STAGES3-NOT:       nvvm.mma.sync
// STAGES3:           scf.yield
// Paired stores: two adjacent bf16 columns per store, 32 per lane.
// STAGES3:         vector.from_elements %{{.*}}, %{{.*}} : vector<2xbf16>
// STAGES3-NEXT:    vector.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : memref<1000x1000xbf16>, vector<2xbf16>
// STAGES3-COUNT-31: vector.store
// STAGES3-NOT:     vector.store
// STAGES3:         gpu.return

// ffma with 32 x 64 block tiles of 4 warps: threads laid out 8 x 16, each
// owning one 4 x 4 chunk of outputs; [8][32] and [8][64] staging in workgroup
// memory (16-byte aligned), 4-element vector reads of A and B per K step, and
// the payload's mulf + addf fused into one FMA.
// FFMA-LABEL: func.func @gemm(
// FFMA:         kopt.launch @kopt_kernels::@matmul_0
// FFMA-SAME:      blocks in (%c512{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// FFMA-SAME:      threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// FFMA:         gpu.func @matmul_0(
// FFMA-SAME:      workgroup(%[[SA:.*]] : memref<8x32xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[SB:.*]] : memref<8x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// FFMA-NOT:       nvvm.mma.sync
// FFMA:           scf.for {{.*}} -> ([[F32X16:(f32, ){15}f32]])
// FFMA:             vector.load %[[SA]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<8x32xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// FFMA:             vector.load %[[SB]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<8x64xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// FFMA:             math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
// FFMA-COUNT-15:    math.fma
// FFMA-NOT:         arith.mulf
// FFMA-NOT:       nvvm.mma.sync
// FFMA:         gpu.return
// ffma with stages = 2: two buffers each; tile 0 staged before the loop, then
// per K tile the next tile's elements are loaded into registers (before the
// FMAs), this tile computed from buffer kt % 2, the registers stored into
// buffer 1 - kt % 2, one barrier.
// FFMA2-LABEL: func.func @gemm(
// FFMA2:         gpu.func @matmul_0(
// FFMA2-SAME:      workgroup(%[[SA:.*]] : memref<2x8x32xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[SB:.*]] : memref<2x8x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// FFMA2:         memref.store %{{.*}}, %[[SA]][%{{c0[_0-9]*}}, %{{.*}}, %{{.*}}]
// FFMA2:         memref.store %{{.*}}, %[[SB]][%{{c0[_0-9]*}}, %{{.*}}, %{{.*}}]
// FFMA2:         gpu.barrier
// FFMA2:         scf.for %[[KT:[a-z0-9_]+]] = {{.*}} -> ([[F32X16:(f32, ){15}f32]])
// FFMA2:           %[[BUF:.*]] = arith.remui %[[KT]], %{{c2[_0-9]*}} : index
// FFMA2:           %[[NEXT:.*]] = arith.addi %[[KT]], %{{c1[_0-9]*}} : index
// FFMA2:           memref.load
// FFMA2-NOT:       gpu.barrier
// FFMA2:           scf.for
// FFMA2:             vector.load %[[SA]][%[[BUF]], %{{.*}}, %{{.*}}]
// FFMA2:             math.fma
// FFMA2:           %[[OTHER:.*]] = arith.subi %{{c1[_0-9]*}}, %[[BUF]] : index
// FFMA2:           memref.store %{{.*}}, %[[SA]][%[[OTHER]], %{{.*}}, %{{.*}}]
// FFMA2:           memref.store %{{.*}}, %[[SB]][%[[OTHER]], %{{.*}}, %{{.*}}]
// FFMA2:           gpu.barrier
// FFMA2-NEXT:      scf.yield
// 16 warps (512 threads) staging a 16 x 16 B tile (256 elements): the threads
// past the tile's end skip their access (found on the H200 as an illegal
// address in the random sample of the schedule space).
// PARTIAL-LABEL: func.func @gemm(
// PARTIAL:       gpu.func @matmul_0(
// PARTIAL-SAME:    workgroup(%{{.*}} : memref<16x256xbf16, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<16x16xbf16, #gpu.address_space<workgroup>>)
// PARTIAL:         memref.store %{{.*}}, %{{.*}} : memref<16x256xbf16
// PARTIAL:         %[[E:.*]] = arith.addi %thread_id_x, %c0{{(_[0-9]+)?}} : index
// PARTIAL-NEXT:    %[[C256:.*]] = arith.constant 256 : index
// PARTIAL-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[E]], %[[C256]] : index
// The load is guarded by the tile's end as well as the operand's bounds:
// PARTIAL:         %[[G:.*]] = arith.andi %{{.*}}, %[[IN]] : i1
// PARTIAL-NEXT:    %{{.*}} = arith.constant 0.0{{.*}} : bf16
// PARTIAL-NEXT:    %{{.*}} = scf.if %[[G]] -> (bf16) {
// PARTIAL:         scf.if %[[IN]] {
// PARTIAL-NEXT:      memref.store %{{.*}}, %[[SB]]
// wgmma: 128 x 256 block tiles of two warpgroups (64 x 256 each, m64n256k16),
// four stages of 128-byte swizzled [128][64] and [256][64] bf16 tiles (196608
// bytes), cp.async into the swizzled layout, a proxy fence, descriptors, four
// wgmma per K step of 64, which run while the previous step's stage is refilled.
// WGMMA-LABEL: func.func @gemm(
// WGMMA:         kopt.launch @kopt_kernels::@matmul_0
// WGMMA-SAME:      blocks in (%c32{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// WGMMA-SAME:      threads in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// WGMMA-SAME:      dynamic_shared_memory_size %c196608_i32
// WGMMA:         memref.view {{.*}} to memref<4x1x128x64xbf16, 3>
// WGMMA:         memref.view {{.*}} to memref<4x1x256x64xbf16, 3>
// Chunk c of row r goes to chunk c ^ (r % 8).
// WGMMA:         arith.xori
// WGMMA:         scf.for
// WGMMA:           nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// WGMMA-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA-NEXT:      gpu.barrier
// The descriptors start at the stage's views.
// WGMMA:           memref.view {{.*}} to memref<1x128x64xbf16, 3>
// WGMMA:           memref.extract_aligned_pointer_as_index
// WGMMA:           nvvm.wgmma.fence.aligned
// WGMMA:           nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WGMMA-COUNT-3:   nvvm.wgmma.mma_async
// WGMMA-NOT:       nvvm.wgmma.mma_async
// WGMMA:           nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT:      nvvm.wgmma.wait.group.sync.aligned 1
// WGMMA-NEXT:      gpu.barrier
// WGMMA:           nvgpu.device_async_copy
// WGMMA:           nvgpu.device_async_create_group
// WGMMA-NEXT:      scf.yield
// WGMMA:         nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA:         vector.store {{.*}} : memref<1000x1000xbf16>, vector<2xbf16>
// WGMMA-COUNT-63: vector.store
// WGMMA-NOT:     vector.store
// WGMMA:         gpu.return
// WGMMAPTX:      .extern .shared .align 1024 .b8 kopt_dynamic_smem[];
// WGMMAPTX:      fence.proxy.async.shared::cta;
// WGMMAPTX:      wgmma.fence.sync.aligned;
// WGMMAPTX:      wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// WGMMAPTX:      wgmma.commit_group.sync.aligned;
// WGMMAPTX:      wgmma.wait_group.sync.aligned 1;
// WGMMAPTX:      wgmma.wait_group.sync.aligned 0;
func.func @gemm(%a: tensor<1000x4096xbf16>, %b: tensor<1000x4096xbf16>) -> tensor<1000x1000xbf16> {
  %c = kopt.matmul %a, %b {transpose_b} : tensor<1000x4096xbf16>, tensor<1000x4096xbf16> -> tensor<1000x1000xbf16>
  return %c : tensor<1000x1000xbf16>
}

