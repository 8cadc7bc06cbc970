// TMA (schedule copy = tma, wgmma on sm_90a) in kopt-tile and kopt-pipeline: the kernel takes
// A's and B's tensor maps as two i64 parameters after the others; thread 0
// initializes a "full" mbarrier (1 arrival + the stage's bytes) and an "empty" one
// (one arrival per warp) per stage, issues the prologue's box copies
// (cp.async.bulk.tensor into shared::cluster addresses, 64 K elements x block rows
// per box), and in the K loop every thread waits on the stage's full mbarrier,
// issues its wgmma, lane 0 of each warp releases the previous stage, and thread 0
// waits on that stage's empty mbarrier before refilling it. No block barrier in
// the K loop. The host side passes placeholders carrying the maps' geometry, which
// the manifest turns into `tensor_maps`.
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-tma.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// Split-K: a split runs min(its K tiles, those starting inside K):
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-tma-split-k4.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=SPLIT
// PTX that ptxas accepts, and the manifest's tensor maps:
// RUN: rm -f %t.ptx %t.json %t-s.ptx %t-p.ptx %t-p.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-tma.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-s.ptx" --kopt-schedule=%S/Inputs/schedule-tma-split-k4.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-s.ptx -o %t-s.cubin
// A persistent grid: the ring runs on across tiles (mbarriers after the staged tile):
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-p.ptx" --kopt-schedule=%S/Inputs/schedule-tma-persistent.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t-p.ptx -o %t-p.cubin
// RUN: FileCheck %s --check-prefix=JSON-PERSISTENT < %t-p.json
// The default schedule of this shape is TMA (the prefill tile; 512 tiles, at least
// 3 per SM: a persistent grid with a producer warp, 3 stages):
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule | FileCheck %s --check-prefix=DEFAULT

// CHECK-LABEL: func.func @prefill(
// CHECK:         %[[MA:.*]] = arith.constant {kopt.tensor_map = {box = array<i64: 64, 128>, swizzle = 128 : i64, tensor = 0 : i64}} 0 : i64
// CHECK:         %[[MB:.*]] = arith.constant {kopt.tensor_map = {box = array<i64: 64, 256>, swizzle = 128 : i64, tensor = 1 : i64}} 0 : i64
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 {{.*}} dynamic_shared_memory_size %{{c196672_i32[_0-9]*}} args({{.*}}, %[[MA]], %[[MB]] : {{.*}}, i64, i64)
// CHECK:       gpu.func @matmul_0(%{{.*}}: memref<4096x4096xbf16>, %{{.*}}: memref<4096x4096xbf16>, %{{.*}}: memref<4096x4096xbf16>, %[[A:.*]]: i64, %[[B:.*]]: i64)
// CHECK-DAG:     %[[PA:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr
// CHECK-DAG:     %[[PB:.*]] = llvm.inttoptr %[[B]] : i64 to !llvm.ptr
// CHECK:         scf.if
// CHECK-COUNT-4:   nvvm.mbarrier.init %{{.*}}, %{{c1_i32.*}} : !llvm.ptr<3>, i32
// CHECK:           nvvm.fence.mbarrier.init
// CHECK:         gpu.barrier
// Prologue: stages - 1 = 3 loads of 128 x 64 + 256 x 64 bf16 (49152 bytes).
// CHECK-COUNT-3: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{c49152_i32.*}}
// CHECK:         scf.for
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.wgmma.mma_async
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.mbarrier.arrive.expect_tx
// CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PA]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PB]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK:           scf.yield
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0

// SPLIT-LABEL: gpu.func @matmul_0(
// SPLIT:         %[[KB:.*]] = arith.muli %{{.*}}, %{{c1024[_0-9]*}} : index
// SPLIT:         %[[REST:.*]] = arith.subi %{{c4096[_0-9]*}}, %[[KB]] : index
// SPLIT:         %[[COUNT:.*]] = arith.minui %{{.*}}, %{{c16[_0-9]*}} : index
// SPLIT:         scf.for %{{.*}} = %{{c0[_0-9]*}} to %[[COUNT]] step

// PTX: .param .u64 matmul_0_param_3,
// PTX: .param .u64 matmul_0_param_4
// PTX: mbarrier.init.shared.b64
// PTX: fence.mbarrier_init.release.cluster;
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// JSON:      "params": [
// JSON:          "name": "a",
// JSON:          "name": "b",
// JSON:          "name": "result",
// JSON:      "tensor_maps": [
// JSON-NEXT:   {
// JSON-NEXT:     "tensor": "a",
// JSON-NEXT:     "box": [
// JSON-NEXT:       64,
// JSON-NEXT:       128
// JSON-NEXT:     ],
// JSON-NEXT:     "swizzle": 128
// JSON-NEXT:   },
// JSON-NEXT:   {
// JSON-NEXT:     "tensor": "b",
// JSON-NEXT:     "box": [
// JSON-NEXT:       64,
// JSON-NEXT:       256
// JSON-NEXT:     ],
// JSON-NEXT:     "swizzle": 128
// JSON-NEXT:   }
// JSON-NEXT: ],
// JSON:      "dynamic_shared_bytes": 196672,
// JSON:      "copy": "tma",
// The launch binds the tensors only; the runtime builds the maps.
// JSON:      "launches": [
// JSON:          "args": [
// JSON-NEXT:       {
// JSON-NEXT:         "arg": 0
// JSON-NEXT:       },
// JSON-NEXT:       {
// JSON-NEXT:         "arg": 1
// JSON-NEXT:       },
// JSON-NEXT:       {
// JSON-NEXT:         "arg": 2
// JSON-NEXT:       }
// JSON-NEXT:     ]

// 3 stages (147456 bytes), the staged 128 x 264 bf16 tile after them (67584), then
// 6 mbarriers (48).
// JSON-PERSISTENT: "tensor_maps": [
// JSON-PERSISTENT: "dynamic_shared_bytes": 215088,

// DEFAULT: schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 3, split_k = 1, swizzle = 8, vector_width = 8, persistent = true, warp_specialize = true>
func.func @prefill(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = kopt.matmul %a, %b {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %0 : tensor<4096x4096xbf16>
}
