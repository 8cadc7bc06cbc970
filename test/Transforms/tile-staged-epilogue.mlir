// The staged epilogue (tensor-core schedules with vector_width > 2) in
// kopt-tile (kopt-pipeline drains the copies first): after the K loop (wgmma.wait_group 0; each thread's
// cp.async copies landed; a barrier) the lanes write their rounded accumulator
// pairs into a block_m x (block_n + 8) tile of C's type in shared memory, then,
// after a barrier, every thread stores vector_width-element chunks of the tile's
// rows, consecutive threads consecutive chunks, masked at the bounds.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// mma_sync (sm_90: no wgmma) stages the same way:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8.json chip=sm_90" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile="chip=sm_90" --kopt-pipeline | FileCheck %s --check-prefix=MMA
// A persistent grid keeps the tile after the stages (the next tile's copies are
// in flight), and waits for no copy:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8-persistent.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=PERSISTENT
// Split-K: the tile's last block stages the sums of the partials:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw8-split-k2.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=SPLIT
// PTX that ptxas accepts, and the manifest's shared memory:
// RUN: rm -f %t.ptx %t.json %t-p.ptx %t-p.json %t-s.ptx
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-vw8.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-p.ptx" --kopt-schedule=%S/Inputs/schedule-vw8-persistent.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-p.ptx -o %t-p.cubin
// RUN: FileCheck %s --check-prefix=JSON-PERSISTENT < %t-p.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-s.ptx" --kopt-schedule=%S/Inputs/schedule-vw8-split-k2.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-s.ptx -o %t-s.cubin
// f32 C: 4 elements (16 bytes) per store; 8 would be 32 bytes:
// RUN: rm -f %t-f.ptx
// RUN: kopt-opt %S/Inputs/staged-epilogue-f32.mlir --kopt-to-ptx="output=%t-f.ptx" --kopt-schedule=%S/Inputs/schedule-vw4.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-f.ptx -o %t-f.cubin
// RUN: kopt-opt %S/Inputs/staged-epilogue-f32.mlir --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-vw4.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=F32
// RUN: not kopt-opt %S/Inputs/staged-epilogue-f32.mlir --kopt-to-ptx="output=%t-bad.ptx" --kopt-schedule=%S/Inputs/schedule-vw8.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIDE

// 128 x 256 wgmma tiles, 4 stages (196608 bytes); the 128 x 264 bf16 tile
// (67584 bytes) reuses them.
// CHECK-LABEL: func.func @prefill(
// CHECK:         vector_width = 8
// CHECK:       gpu.func @matmul_0(
// CHECK:         scf.for
// CHECK:           nvvm.wgmma.mma_async
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// kopt-pipeline drains the copies (the mainloop's `drain`), the epilogue's barrier
// follows.
// CHECK:         nvvm.cp.async.wait.group 0
// CHECK:         gpu.barrier
// CHECK:         %[[TILE:.*]] = memref.view %{{.*}}[%{{c0[_0-9]*}}][] : memref<0xi8, 3> to memref<128x264xbf16, 3>
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         vector.store %{{.*}}, %[[TILE]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<128x264xbf16, 3>, vector<2xbf16>
// CHECK:         gpu.barrier
// 128 x 256 / 8 = 4096 chunks over 256 threads: 16 each.
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C16]] step
// CHECK:           arith.cmpi ult, %{{.*}}, %{{c4096[_0-9]*}}
// CHECK:           arith.cmpi ult, %{{.*}}, %{{c4096[_0-9]*}}
// CHECK:           scf.if
// CHECK-NEXT:        %[[V:.*]] = vector.load %[[TILE]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<128x264xbf16, 3>, vector<8xbf16>
// CHECK-NEXT:        vector.store %[[V]], %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4096x4096xbf16>, vector<8xbf16>
// CHECK:         gpu.return
// MMA-LABEL:   func.func @prefill(
// MMA:           instruction = mma_sync, {{.*}}vector_width = 8
// MMA:         gpu.func @matmul_0(
// MMA:           nvvm.mma.sync
// MMA:           nvvm.cp.async.wait.group 0
// MMA:           gpu.barrier
// MMA:           %[[TILE:.*]] = memref.view %{{.*}}[%{{c0[_0-9]*}}][] : memref<0xi8, 3> to memref<128x136xbf16, 3>
// MMA:           vector.store %{{.*}}, %[[TILE]]{{.*}} : memref<128x136xbf16, 3>, vector<2xbf16>
// MMA:           gpu.barrier
// MMA:           vector.load %[[TILE]]{{.*}} : memref<128x136xbf16, 3>, vector<8xbf16>
// MMA-NEXT:      vector.store {{.*}} : memref<4096x4096xbf16>, vector<8xbf16>
// PERSISTENT-LABEL: func.func @prefill(
// PERSISTENT:         stages = 3, {{.*}}vector_width = 8, persistent = true
// PERSISTENT:       gpu.func @matmul_0(
// PERSISTENT:         scf.for
// PERSISTENT:           nvvm.wgmma.wait.group.sync.aligned 0
// PERSISTENT-NOT:       cp.async.wait
// PERSISTENT:           gpu.barrier
// 3 stages of (128 + 256) x 64 bf16 = 147456 bytes, then the tile.
// PERSISTENT:           memref.view %{{.*}}[%{{c147456[_0-9]*}}][] : memref<0xi8, 3> to memref<128x264xbf16, 3>
// PERSISTENT:           vector.load {{.*}} : memref<128x264xbf16, 3>, vector<8xbf16>
// PERSISTENT:         }
// PERSISTENT:         gpu.return
// SPLIT-LABEL: func.func @prefill(
// SPLIT:         split_k = 2, {{.*}}vector_width = 8
// SPLIT:       gpu.func @matmul_0(
// SPLIT:         memref.view {{.*}} to memref<128x264xbf16, 3>
// SPLIT:         memref.atomic_rmw addf
// SPLIT:         nvvm.barrier #nvvm.reduction<or>
// SPLIT:         scf.if
// SPLIT:           vector.load {{.*}} : memref<{{[0-9]+}}xf32>, vector<2xf32>
// SPLIT:           vector.store {{.*}} : memref<128x264xbf16, 3>, vector<2xbf16>
// SPLIT:           gpu.barrier
// SPLIT:           vector.load {{.*}} : memref<128x264xbf16, 3>, vector<8xbf16>
// JSON:      "name": "matmul_0",
// JSON:      "dynamic_shared_bytes": 196608,
// JSON:      "vector_width": 8
// JSON-PERSISTENT:      "name": "matmul_0",
// JSON-PERSISTENT:      "dynamic_shared_bytes": 215040,
func.func @prefill(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}

// -----

// 100 x 1000 f16 with 64 x 32 tiles (the decode rule): 64 x 40 tile, 256 chunks
// over 128 threads; rows past M = 100 are masked.
// CHECK-LABEL: func.func @odd(
// CHECK:       gpu.func @matmul_0(
// CHECK:         memref.view {{.*}} to memref<64x40xf16, 3>
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C2]] step
// CHECK:           arith.cmpi ult, %{{.*}}, %{{c100[_0-9]*}}
// CHECK:           arith.cmpi ult, %{{.*}}, %{{c1000[_0-9]*}}
// CHECK:           vector.load {{.*}} : memref<64x40xf16, 3>, vector<8xf16>
// CHECK-NEXT:      vector.store {{.*}} : memref<100x1000xf16>, vector<8xf16>
func.func @odd(%x: tensor<100x4096xf16>, %w: tensor<1000x4096xf16>) -> tensor<100x1000xf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<100x4096xf16>, tensor<1000x4096xf16> -> tensor<100x1000xf16>
  return %y : tensor<100x1000xf16>
}

// Inputs/staged-epilogue-f32.mlir, f32 C with vector_width 4: rows of 64 + 8
// floats.
// F32-LABEL: func.func @f32_out(
// F32:         vector_width = 4
// F32:       gpu.func @matmul_0(
// F32:         memref.view {{.*}} to memref<64x72xf32, 3>
// F32:         vector.store {{.*}} : memref<64x72xf32, 3>, vector<2xf32>
// F32:         vector.load {{.*}} : memref<64x72xf32, 3>, vector<4xf32>
// F32-NEXT:    vector.store {{.*}} : memref<512x1000xf32>, vector<4xf32>
// WIDE: schedule is invalid for matmul/512x1000x4096/bf16,bf16->f32/{{.*}}: vector_width = 8 f32 outputs make 32-byte stores; the widest store is 16 bytes
