// The TMA store epilogue (tma_store) in kopt-tile: the lanes write their
// rounded accumulator pairs into 128-byte swizzled sub-tiles of C's type
// ([block_n / 64][block_m][64] bf16: one TMA box each; 16-byte chunk j of row r
// at chunk j ^ (r % 8)), each pair at the lane's base address XOR the chunk's
// constant plus the row's and sub-tile's, fence their writes for the async
// proxy, a barrier, then thread 0 stores the boxes through C's tensor map and
// commits them as one bulk async-group. Only the next use of the staging
// memory and the kernel's exit wait until the TMA unit has read it.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8-tma-store.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// A persistent grid with a producer warp: the store of one tile overlaps the
// next tile's K loop; the next epilogue waits for the reads first.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8-tma-store-persistent.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=PERSISTENT
// PTX that ptxas accepts, and the manifest's tensor map of the output:
// RUN: rm -f %t.ptx %t.json %t-p.ptx %t-p.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-vw8-tma-store.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-p.ptx" --kopt-schedule=%S/Inputs/schedule-vw8-tma-store-persistent.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-p.ptx -o %t-p.cubin
// What tma_store needs (docs/schedules.md):
// RUN: echo '{"tma_store": true, "vector_width": 2}' > %t-vw2.json
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t-bad.ptx" --kopt-schedule=%t-vw2.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=VW2
// RUN: echo '{"tma_store": true, "instruction": "mma_sync", "warp_m": 64, "warp_n": 64, "block_k": 32}' > %t-mma.json
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t-bad.ptx" --kopt-schedule=%t-mma.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=MMA

// C's map follows A's and B's: 64 bf16 (128 bytes) x 128 rows, 128-byte swizzle.
// CHECK-LABEL: func.func @prefill(
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 64, 128>, swizzle = 128 : i64, tensor = 0 : i64}}
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 64, 256>, swizzle = 128 : i64, tensor = 1 : i64}}
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 64, 128>, swizzle = 128 : i64, tensor = 2 : i64}}
// CHECK:         kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:      tma_store = true
// CHECK:       gpu.func @matmul_0(%{{.*}}: memref<4096x4096xbf16>, %{{.*}}: memref<4096x4096xbf16>, %[[C:.*]]: memref<4096x4096xbf16>, %{{.*}}: i64, %{{.*}}: i64, %[[MAPC:.*]]: i64)
// CHECK:         kopt.mainloop
// The staging tile reuses the drained ring: no read of an earlier store to wait for.
// CHECK:         nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT:    gpu.barrier
// CHECK:         llvm.inline_asm has_side_effects "mov.u32 $0, 0;", "=r"
// CHECK:         memref.view %{{.*}} : memref<0xi8, 3> to memref<4x128x64xbf16, 3>
// The lane's chunk ^ (row % 8), then per pair: XOR the chunk's constant, add
// the sub-tile's and row's.
// CHECK:         arith.xori %{{.*}}, %{{.*}} : index
// CHECK:         %[[LANE:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK:         %[[X:.*]] = arith.xori %[[LANE]], %{{c0_i64[_0-9]*}} : i64
// CHECK:         %[[A:.*]] = arith.addi %[[X]], %{{c0_i64[_0-9]*}} : i64
// CHECK:         %[[P:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr<3>
// CHECK:         llvm.store %{{.*}}, %[[P]] {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// Eight rows below: + 8 x 128 bytes.
// CHECK:         arith.xori %{{.*}}, %{{c0_i64[_0-9]*}} : i64
// CHECK:         arith.addi %{{.*}}, %{{c1024_i64[_0-9]*}} : i64
// The second 8-column chunk: XOR 16.
// CHECK:         arith.xori %{{.*}}, %{{c16_i64[_0-9]*}} : i64
// 64 pairs per lane (the first and second matched above):
// CHECK-COUNT-62: llvm.store
// No thread stores C itself:
// CHECK-NOT:     vector.store {{.*}} : memref<4096x4096xbf16>
// CHECK:         nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    gpu.barrier
// CHECK:         scf.if
// CHECK:           %[[MAP:.*]] = llvm.inttoptr %[[MAPC]] : i64 to !llvm.ptr
// 4 boxes: columns n0, n0 + 64, ..., rows m0.
// CHECK-COUNT-4:   nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr, <3>
// CHECK-NEXT:      nvvm.cp.async.bulk.commit.group
// CHECK:         }
// CHECK-NEXT:    nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT:    gpu.return
// PERSISTENT-LABEL: func.func @prefill(
// PERSISTENT:       gpu.func @matmul_0(
// PERSISTENT:         scf.for
// PERSISTENT:           scf.for
// PERSISTENT:             nvvm.wgmma.mma_async
// The previous tile's boxes must have been read before the tile is rewritten
// (after the stages: 3 x (128 + 256) x 64 bf16 = 147456 bytes).
// PERSISTENT:           nvvm.cp.async.bulk.wait_group 0 {read}
// PERSISTENT-NEXT:      arith.constant 0 : i32
// PERSISTENT-NEXT:      arith.constant 256 : i32
// PERSISTENT-NEXT:      nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// PERSISTENT:           arith.addi %{{c147456[_0-9]*}}, %{{.*}} : index
// PERSISTENT:           memref.view {{.*}} to memref<4x128x64xbf16, 3>
// PERSISTENT:           nvvm.fence.proxy
// The tile loop goes on without waiting; the block's exit waits.
// PERSISTENT:           nvvm.cp.async.bulk.commit.group
// PERSISTENT-NEXT:      }
// PERSISTENT-NEXT:    }
// PERSISTENT-NEXT:    nvvm.cp.async.bulk.wait_group 0 {read}
// PERSISTENT:       }
// PERSISTENT-NEXT:  gpu.return
// JSON:      "name": "matmul_0",
// JSON:      "tensor_maps": [
// JSON:          "tensor": "b",
// JSON:        {
// JSON-NEXT:     "tensor": "result",
// JSON-NEXT:     "box": [
// JSON-NEXT:       64,
// JSON-NEXT:       128
// JSON-NEXT:     ],
// JSON-NEXT:     "swizzle": 128
// JSON-NEXT:   }
// JSON-NEXT: ],
// JSON:      "tma_store": true,
// PTX-COUNT-4: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX:       cp.async.bulk.commit_group;
// PTX:       cp.async.bulk.wait_group.read 0;
// VW2: schedule is invalid for matmul/4096x4096x4096/{{.*}}: tma_store = true stores the staged epilogue tile: vector_width must be above 2, got 2
// MMA: schedule is invalid for matmul/4096x4096x4096/{{.*}}: tma_store = true is implemented for wgmma (sm_90a) only, not mma_sync
func.func @prefill(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}
