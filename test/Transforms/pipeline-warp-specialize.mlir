// Warp specialization (schedule warp_specialize = true, wgmma with copy = tma) in
// kopt-tile and kopt-pipeline: the block gets one warp more than the warpgroups (288
// threads for two); after the mbarriers are initialized, the role is read from
// lane 0's warp index (gpu.shuffle idx: uniform for ptxas), the producer warp's
// lane 0 issues every load, each after waiting on its stage's empty mbarrier,
// and the warpgroups (the consumers) only wait on full mbarriers, issue wgmma,
// release stages and run the epilogue, whose barriers name the consumers'
// 256 threads. The empty mbarriers expect one arrival per consumer warp (8).
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ws.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// Split-K: the consumers tell each other whether their block is the tile's last with
// barrier.red.or over 256 threads (the LLVM intrinsic; nvvm.barrier takes a reduction
// over the whole block only):
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ws-split-k4.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=SPLIT
// A persistent grid: the producer walks the block's tiles and their K tiles:
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ws-persistent.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s --check-prefix=PERSISTENT
// PTX that ptxas accepts (C7520, serialized wgmma, would be a performance bug: the
// shuffle keeps the consumers' path uniform), and the manifest:
// RUN: rm -f %t.ptx %t.json %t-s.ptx %t-p.ptx
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-ws.json -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-s.ptx" --kopt-schedule=%S/Inputs/schedule-ws-split-k4.json -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t-s.ptx -o %t-s.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX-SPLIT < %t-s.ptx
// RUN: kopt-opt %s --kopt-to-ptx="output=%t-p.ptx" --kopt-schedule=%S/Inputs/schedule-ws-persistent.json -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t-p.ptx -o %t-p.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-LABEL: func.func @prefill(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{c288[_0-9]*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{c196672_i32[_0-9]*}}
// CHECK:       gpu.func @matmul_0(
// CHECK-SAME:    known_block_size = array<i32: 288, 1, 1>
// CHECK:         scf.if
// CHECK:           nvvm.mbarrier.init %{{.*}}, %{{c1_i32.*}} : !llvm.ptr<3>, i32
// CHECK:           nvvm.mbarrier.init %{{.*}}, %{{c8_i32.*}} : !llvm.ptr<3>, i32
// CHECK:           nvvm.fence.mbarrier.init
// CHECK:         gpu.barrier
// CHECK:         gpu.shuffle idx %{{.*}}, %{{c0_i32[_0-9]*}}, %{{c32_i32[_0-9]*}} : i32
// CHECK:         %[[PRODUCER:.*]] = arith.cmpi uge, %{{.*}}, %{{c8_i32[_0-9]*}} : i32
// CHECK:         scf.if %[[PRODUCER]] {
// The producer: every load (64 K tiles), no wgmma, no barrier.
// CHECK-NEXT:      scf.if
// CHECK:             scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step
// CHECK-NOT:           gpu.barrier
// CHECK-NOT:           wgmma
// CHECK:               nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{c49152_i32.*}}
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:         } else {
// The consumers: zero accumulators, the K loop without copies or barriers.
// CHECK:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{.*}} iter_args(
// CHECK-NOT:         cp.async.bulk
// CHECK-NOT:         gpu.barrier
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK-NOT:         cp.async.bulk
// CHECK:             nvvm.wgmma.mma_async
// CHECK-NOT:         cp.async.bulk
// CHECK:             nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT:         cp.async.bulk
// CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK-NOT:         cp.async.bulk
// CHECK:             scf.yield
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// The staged epilogue syncs the 256 consumer threads only.
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.barrier id = %{{c0_i32[_0-9]*}} number_of_threads = %{{c256_i32[_0-9]*}}
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.barrier id = %{{c0_i32[_0-9]*}} number_of_threads = %{{c256_i32[_0-9]*}}
// CHECK-NOT:       gpu.barrier
// CHECK:         gpu.return

// SPLIT-LABEL: gpu.func @matmul_0(
// SPLIT:         %[[COUNT:.*]] = arith.minui %{{.*}}, %{{c16[_0-9]*}} : index
// SPLIT:         scf.if
// SPLIT:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %[[COUNT]] step
// SPLIT:         } else {
// SPLIT:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %[[COUNT]] step
// SPLIT:           nvvm.barrier id = %{{c0_i32[_0-9]*}} number_of_threads = %{{c256_i32[_0-9]*}}
// SPLIT:           llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.or.aligned.count"(%{{c0_i32[_0-9]*}}, %{{c256_i32[_0-9]*}}, %{{.*}}) : (i32, i32, i1) -> i1

// PERSISTENT-LABEL: gpu.func @matmul_0(
// PERSISTENT:         gpu.shuffle idx
// PERSISTENT:         scf.if
// PERSISTENT-NEXT:      scf.if
// PERSISTENT:             scf.for
// PERSISTENT:               scf.for
// PERSISTENT:                 nvvm.mbarrier.try_wait.parity
// PERSISTENT:                 nvvm.cp.async.bulk.tensor.shared.cluster.global
// PERSISTENT:         } else {
// PERSISTENT:           scf.for
// PERSISTENT:             scf.for
// PERSISTENT:               nvvm.wgmma.mma_async
// PERSISTENT:             nvvm.wgmma.wait.group.sync.aligned 0
// PERSISTENT:             nvvm.barrier id = %{{c0_i32[_0-9]*}} number_of_threads = %{{c256_i32[_0-9]*}}

// PTXAS-NOT: C7520
// PTXAS:     Used {{[0-9]+}} registers
// PTXAS-NOT: C7520

// PTX: .maxntid 288, 1, 1
// PTX: shfl.sync.idx.b32
// PTX: bar.sync 0, 256;
// PTX-SPLIT: bar.red.or.pred {{.*}}, 0, 256,

// JSON:      "block": [
// JSON-NEXT:   288,
// JSON:      "num_warps": 9,
// JSON:      "warp_specialize": true
func.func @prefill(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = kopt.matmul %a, %b {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %0 : tensor<4096x4096xbf16>
}
