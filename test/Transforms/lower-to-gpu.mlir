// kopt-lower-to-gpu: the host function in destination-passing style, the
// gpu.module @kopt_kernels with one gpu.func per kopt.kernel, and the launches.
// (Diagnostics: lower-to-gpu-invalid.mlir.)
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// The output verifies and re-parses.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | kopt-opt -split-input-file -o /dev/null

// Index constants print as %c<value> or %c<value>_<n>; {{C}}-style patterns below
// match either.

//===----------------------------------------------------------------------===//
// Elementwise kernels: grid-stride loop, 256 threads per block
//===----------------------------------------------------------------------===//

// An innermost extent of 7 allows no 16-byte accesses: one element per lane (V = 1).
// CHECK-LABEL: module {
// CHECK:       func.func @elementwise(
// CHECK-SAME:    %[[X:[^:]*]]: memref<4x7xf32>, %[[C:[^:]*]]: memref<4x1xf32>, %[[OUT:[^:]*]]: memref<4x7xf32>)
// CHECK-SAME:    attributes {kopt.result_count = 1 : i64} {
// CHECK-NOT:     memref.alloc
// CHECK:         kopt.launch @kopt_kernels::@mul_0
// CHECK-SAME:      blocks in (%c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      dynamic_shared_memory_size %c0_i32{{(_[0-9]+)?}}
// CHECK-SAME:      args(%[[X]], %[[C]], %[[OUT]] : memref<4x7xf32>, memref<4x1xf32>, memref<4x7xf32>)
// CHECK-SAME:      {kernel_class = "elementwise", num_inputs = 2 : i64, num_outputs = 1 : i64, source = {attrs = {}, name = "mul", params = ["lhs", "rhs", "result"]}}
// CHECK-NOT:     memref.dealloc
// CHECK:         return
// CHECK-NEXT:  }
// CHECK:       gpu.module @kopt_kernels {
// CHECK-NEXT:    gpu.func @mul_0(%[[A:.*]]: memref<4x7xf32>, %[[B:.*]]: memref<4x1xf32>, %[[O:.*]]: memref<4x7xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
// CHECK-NEXT:      %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:      %[[BID:.*]] = gpu.block_id x
// CHECK-NEXT:      %[[C256:.*]] = arith.constant 256 : index
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[BID]], %[[C256]] : index
// CHECK-NEXT:      %[[START:.*]] = arith.addi %[[BASE]], %[[TID]] : index
// CHECK-NEXT:      %[[STEP:.*]] = arith.constant 256 : index
// CHECK-NEXT:      %[[TOTAL:.*]] = arith.constant 28 : index
// CHECK-NEXT:      scf.for %[[I:.*]] = %[[START]] to %[[TOTAL]] step %[[STEP]] {
// CHECK-NEXT:        %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:        %[[J:.*]] = arith.remui %[[I]], %[[C7]] : index
// CHECK-NEXT:        %[[R:.*]] = arith.divui %[[I]], %[[C7]] : index
// CHECK-NEXT:        %[[VA:.*]] = memref.load %[[A]][%[[R]], %[[J]]] : memref<4x7xf32>
// The size-1 dimension of the broadcast operand is read at index 0.
// CHECK-NEXT:        %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:        %[[VB:.*]] = memref.load %[[B]][%[[R]], %[[C0]]] : memref<4x1xf32>
// CHECK-NEXT:        arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[VA]], %[[VB]] : f32
// CHECK-NEXT:        memref.store %[[P]], %[[O]][%[[R]], %[[J]]] : memref<4x7xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @elementwise(%x: tensor<4x7xf32>, %c: tensor<4x1xf32>) -> tensor<4x7xf32> {
  %0 = kopt.mul %x, %c : tensor<4x7xf32>, tensor<4x1xf32> -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// An innermost extent of 8 f32: 16-byte accesses, V = 4 lanes per thread. The
// broadcast operand is the same for the 4 lanes: one scalar load.
// CHECK-LABEL: func.func @elementwise_vector(
// CHECK:       gpu.func @mul_0(%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x1xf32>, %[[O:.*]]: memref<4x8xf32>)
// CHECK:         %[[GROUPS:.*]] = arith.constant 8 : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %{{.*}} to %[[GROUPS]] step %{{.*}} {
// CHECK-NEXT:      %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[LIN:.*]] = arith.muli %[[I]], %[[C4]] : index
// CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[LIN]], %[[C8]] : index
// CHECK-NEXT:      %[[R:.*]] = arith.divui %[[LIN]], %[[C8]] : index
// CHECK-NEXT:      %[[VA:.*]] = vector.load %[[A]][%[[R]], %[[J]]] {alignment = 16 : i64} : memref<4x8xf32>, vector<4xf32>
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[VB:.*]] = memref.load %[[B]][%[[R]], %[[C0]]] : memref<4x1xf32>
// CHECK-NEXT:      arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[E0:.*]] = vector.extract %[[VA]][0] : f32 from vector<4xf32>
// CHECK-NEXT:      %[[P0:.*]] = arith.mulf %[[E0]], %[[VB]] : f32
// CHECK-COUNT-3:   arith.mulf %{{.*}}, %[[VB]] : f32
// CHECK:           %[[VEC:.*]] = vector.from_elements %[[P0]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:      vector.store %[[VEC]], %[[O]][%[[R]], %[[J]]] {alignment = 16 : i64} : memref<4x8xf32>, vector<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
func.func @elementwise_vector(%x: tensor<4x8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = kopt.mul %x, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A large tensor: 8 bf16 lanes per thread (16 bytes), 29360128 / 8 = 3670016 groups;
// a group per thread: 3670016 / 256 = 14336 blocks, and the loop (for tensors past
// the grid limit) steps by the whole grid (14336 * 256 = 3670016), once.
// CHECK-LABEL: func.func @elementwise_large(
// CHECK:         kopt.launch @kopt_kernels::@silu_0
// CHECK-SAME:      blocks in (%c14336{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @silu_0(%{{.*}}: memref<2048x14336xbf16>, %{{.*}}: memref<2048x14336xbf16>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK:         %[[STEP:.*]] = arith.constant 3670016 : index
// CHECK-NEXT:    %[[TOTAL:.*]] = arith.constant 3670016 : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %[[TOTAL]] step %[[STEP]] {
// CHECK:           vector.load %{{.*}} {alignment = 16 : i64} : memref<2048x14336xbf16>, vector<8xbf16>
// CHECK-COUNT-8:   math.exp
// CHECK:           vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-NEXT:      vector.store
func.func @elementwise_large(%x: tensor<2048x14336xbf16>) -> tensor<2048x14336xbf16> {
  %0 = kopt.silu %x : tensor<2048x14336xbf16>
  return %0 : tensor<2048x14336xbf16>
}

// -----
//===----------------------------------------------------------------------===//
// Row kernels: test/Transforms/lower-to-gpu-rows.mlir
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Matmul kernels: 64x64 block tiles, 256 threads, A and B staged in shared memory
//===----------------------------------------------------------------------===//

// bf16 operands on sm_90a, both contiguous along K: the default schedule is wgmma.
// M = 100 gives too few 128 x 256 tiles (1 x 4), so one warpgroup of 64 x 32
// (m64n32k16, N <= 8192) per block, K step 128, five stages that a producer warp
// fills through TMA (warp_specialize): ceil(100 / 64) * ceil(1000 / 32) = 2 * 32 =
// 64 blocks of 128 + 32 threads, 5 * (64 + 32) * 128 * 2 = 122880 bytes + 80 of
// mbarriers.
// (tile-schedules.mlir tests the cp.async wgmma, mma_sync and ffma
// schedules; pipeline-warp-specialize.mlir the producer and the consumers.)
// CHECK-LABEL: func.func @matmul(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:      blocks in (%c64{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c160{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      dynamic_shared_memory_size %c122960_i32
// CHECK-SAME:      kernel_class = "matmul", num_inputs = 2 : i64, num_outputs = 1 : i64, schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 32, block_k = 128, warp_m = 64, warp_n = 32, stages = 5, split_k = 1, swizzle = 1, vector_width = 8, persistent = false, warp_specialize = true>
// CHECK:       memref.global "public" @kopt_dynamic_smem : memref<0xi8, 3> {alignment = 1024 : i64}
// CHECK:       gpu.func @matmul_0(%[[A:.*]]: memref<100x4096xbf16>, %[[B:.*]]: memref<1000x4096xbf16>, %[[C:.*]]: memref<100x1000xbf16>, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 160, 1, 1>}
// CHECK:         %[[SMEM:.*]] = memref.get_global @kopt_dynamic_smem : memref<0xi8, 3>
// CHECK:         %[[SA:.*]] = memref.view %{{[0-9a-z_]+}}[%c0{{(_[0-9]+)?}}][] : memref<0xi8, 3> to memref<5x2x64x64xbf16, 3>
// CHECK:         %[[SB:.*]] = memref.view %{{[0-9a-z_]+}}[%c81920{{(_[0-9]+)?}}][] : memref<0xi8, 3> to memref<5x2x32x64xbf16, 3>
// The producer issues the 32 loads (two K sub-tiles each).
// CHECK:         scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} {
// CHECK-COUNT-4:   nvvm.cp.async.bulk.tensor.shared.cluster.global
// K loop of the consumers over 4096 / 128 = 32 tiles; 16 f32 accumulators per
// thread in one struct.
// CHECK:         scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} iter_args(%{{.*}}) -> (!llvm.struct<([[F32X16:(f32, ){15}f32]])>) {
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7:   nvvm.wgmma.mma_async
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// Epilogue (staged, vector_width 8: tile-staged-epilogue.mlir): round
// to bf16, 8 paired stores per thread into the 64 x 40 shared tile, then 16-byte
// row chunks to C inside the bounds; the barriers count the 128 consumer threads.
// CHECK:         %[[T:.*]] = memref.view %{{[0-9a-z_]+}}[%c0{{(_[0-9]+)?}}][] : memref<0xi8, 3> to memref<64x40xbf16, 3>
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         vector.from_elements
// CHECK-NEXT:    vector.store %{{.*}}, %[[T]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x40xbf16, 3>, vector<2xbf16>
// CHECK-COUNT-7: vector.store %{{.*}}, %[[T]]
// CHECK:         nvvm.barrier id = %{{.*}} number_of_threads = %{{c128_i32[_0-9]*}}
// CHECK:         scf.if
// CHECK-NEXT:      vector.load %[[T]]
// CHECK-NEXT:      vector.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<100x1000xbf16>, vector<8xbf16>
// CHECK-NOT:     vector.store
// CHECK:         gpu.return
func.func @matmul(%x: tensor<100x4096xbf16>, %w: tensor<1000x4096xbf16>) -> tensor<100x1000xbf16> {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<100x4096xbf16>, tensor<1000x4096xbf16> -> tensor<100x1000xbf16>
  return %0 : tensor<100x1000xbf16>
}

// -----

// f16 with K = 4093 (not a multiple of 8) and a transposed A: neither wgmma nor
// cp.async apply; mma_sync with one shared-memory stage of [128][40] and [256][40]
// filled synchronously with element loads (zero outside the bounds).
// CHECK-LABEL: func.func @matmul_sync_staging(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:      schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 128, block_n = 256, block_k = 32, warp_m = 64, warp_n = 64, stages = 1,
// CHECK:       gpu.func @matmul_0(%[[A:.*]]: memref<4093x70xf16>, %[[B:.*]]: memref<4093x50xf16>, %{{.*}}: memref<70x50xf32>)
// CHECK:         memref.view {{.*}} to memref<128x40xf16, 3>
// CHECK:         memref.view {{.*}} to memref<256x40xf16, 3>
// CHECK-NOT:     nvgpu.device_async_copy
// CHECK:         scf.if %{{.*}} -> (f16) {
// CHECK:           memref.load %[[A]]
// CHECK:         nvgpu.ldmatrix
// CHECK:         nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:     arith.truncf
// CHECK:         gpu.return
func.func @matmul_sync_staging(%a: tensor<4093x70xf16>, %b: tensor<4093x50xf16>) -> tensor<70x50xf32> {
  %0 = kopt.matmul %a, %b {transpose_a} : tensor<4093x70xf16>, tensor<4093x50xf16> -> tensor<70x50xf32>
  return %0 : tensor<70x50xf32>
}

// -----

// f32 with transpose_a: ffma, for M <= 64 64 x 32 block tiles (ceil(130 / 32) = 5
// blocks); no rounding in the epilogue; ceil(24 / 16) = 2 K tiles.
// CHECK-LABEL: func.func @matmul_transpose_a(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:      blocks in (%c5{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @matmul_0(%{{.*}}: memref<24x64xf32>, %{{.*}}: memref<24x130xf32>, %{{.*}}: memref<64x130xf32>)
// CHECK-SAME:    workgroup(%{{.*}} : memref<16x64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x32xf32, #gpu.address_space<workgroup>>)
// CHECK:         scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c2{{(_[0-9]+)?}} step
// CHECK-NOT:     arith.truncf
// CHECK:         gpu.return
func.func @matmul_transpose_a(%a: tensor<24x64xf32>, %b: tensor<24x130xf32>) -> tensor<64x130xf32> {
  %0 = kopt.matmul %a, %b {transpose_a} : tensor<24x64xf32>, tensor<24x130xf32> -> tensor<64x130xf32>
  return %0 : tensor<64x130xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Host functions
//===----------------------------------------------------------------------===//

// Destination-passing style: inputs, then one buffer per result; the kernel that
// computes a result writes into that buffer; intermediates get memref.alloc and are
// freed at the end; launches follow the source order.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    %[[X:[^:]*]]: memref<16x4096xbf16>, %[[W:[^:]*]]: memref<4096xbf16>, %[[WG:[^:]*]]: memref<14336x4096xbf16>, %[[WU:[^:]*]]: memref<14336x4096xbf16>,
// CHECK-SAME:    %[[OUT0:[^:]*]]: memref<16x14336xbf16>, %[[OUT1:[^:]*]]: memref<16x4096xbf16>)
// CHECK-SAME:    attributes {kopt.result_count = 2 : i64}
// CHECK-NOT:     -> (
// CHECK:         %[[N:.*]] = memref.alloc() : memref<16x4096xbf16>
// CHECK:         kopt.launch @kopt_kernels::@rmsnorm_0 {{.*}} args(%[[X]], %[[W]], %[[N]] : memref<16x4096xbf16>, memref<4096xbf16>, memref<16x4096xbf16>)
// The up matmul first: the gate matmul's kernel takes silu(gate) * up as its
// epilogue (up an input), writing the first result; silu's result and the
// gate's need no buffer.
// CHECK:         %[[U:.*]] = memref.alloc() : memref<16x14336xbf16>
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 {{.*}} args(%[[N]], %[[WU]], %[[U]], %{{.*}}, %{{.*}} : memref<16x4096xbf16>, memref<14336x4096xbf16>, memref<16x14336xbf16>, i64, i64)
// CHECK-NOT:     memref.alloc
// CHECK:         kopt.launch @kopt_kernels::@matmul_silu_mul_0 {{.*}} args(%[[N]], %[[WG]], %[[U]], %[[OUT0]], %{{.*}}, %{{.*}} : memref<16x4096xbf16>, memref<14336x4096xbf16>, memref<16x14336xbf16>, memref<16x14336xbf16>, i64, i64)
// CHECK-SAME:      kernel_class = "matmul", num_inputs = 3 : i64, num_outputs = 1 : i64
// The second result is the input plus a broadcast row: written to its buffer.
// CHECK:         kopt.launch @kopt_kernels::@add_0 {{.*}} args(%[[X]], %[[W]], %[[OUT1]] : memref<16x4096xbf16>, memref<4096xbf16>, memref<16x4096xbf16>)
// CHECK-NEXT:    memref.dealloc %[[N]] : memref<16x4096xbf16>
// CHECK-NEXT:    memref.dealloc %[[U]] : memref<16x14336xbf16>
// CHECK-NEXT:    return
// CHECK-NEXT:  }
// CHECK:       gpu.module @kopt_kernels {
// CHECK-DAG:     gpu.func @rmsnorm_0(
// CHECK-DAG:     gpu.func @matmul_0(
// CHECK-DAG:     gpu.func @matmul_silu_mul_0(
// CHECK-DAG:     gpu.func @add_0(
func.func @mlp(%x: tensor<16x4096xbf16>, %w: tensor<4096xbf16>, %wg: tensor<14336x4096xbf16>,
               %wu: tensor<14336x4096xbf16>) -> (tensor<16x14336xbf16>, tensor<16x4096xbf16>) {
  %n = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  %g = kopt.matmul %n, %wg {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %u = kopt.matmul %n, %wu {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %s = kopt.silu %g : tensor<16x14336xbf16>
  %p = kopt.mul %s, %u : tensor<16x14336xbf16>, tensor<16x14336xbf16> -> tensor<16x14336xbf16>
  %r = kopt.add %x, %w : tensor<16x4096xbf16>, tensor<4096xbf16> -> tensor<16x4096xbf16>
  return %p, %r : tensor<16x14336xbf16>, tensor<16x4096xbf16>
}

// -----

// A result that another kernel also reads: the consumer reads the output buffer
// (two row ops: two kernels).
// CHECK-LABEL: func.func @result_reused(
// CHECK-SAME:    %[[X:[^:]*]]: memref<4x8xf32>, %[[OUT0:[^:]*]]: memref<4x8xf32>, %[[OUT1:[^:]*]]: memref<4xf32>)
// CHECK-NOT:     memref.alloc
// CHECK:         kopt.launch @kopt_kernels::@softmax_0 {{.*}} args(%[[X]], %[[OUT0]] : memref<4x8xf32>, memref<4x8xf32>)
// CHECK:         kopt.launch @kopt_kernels::@reduce_0 {{.*}} args(%[[OUT0]], %[[OUT1]] : memref<4x8xf32>, memref<4xf32>)
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @result_reused(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %e = kopt.softmax %x : tensor<4x8xf32>
  %s = kopt.reduce sum %e : tensor<4x8xf32> -> tensor<4xf32>
  return %e, %s : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Several functions share one gpu.module; kernel names are unique across them;
// declarations stay as they are; visibility is kept.
// CHECK:       func.func private @external(tensor<4xf32>) -> tensor<4xf32>
// CHECK:       func.func @first(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK:         kopt.launch @kopt_kernels::@exp_0
// CHECK:       func.func private @second(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK:         kopt.launch @kopt_kernels::@exp_1
// A function without kopt ops and results: an empty host function.
// CHECK:       func.func @nothing() attributes {kopt.result_count = 0 : i64} {
// CHECK-NEXT:    return
// CHECK-NEXT:  }
// CHECK:       gpu.module @kopt_kernels {
// CHECK-NEXT:    gpu.func @exp_0(
// CHECK:         gpu.func @exp_1(
// CHECK-NOT:   gpu.module
func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @nothing() {
  return
}

// -----

// A module with no function bodies is left unchanged (no gpu.module).
// (kopt-lower-to-gpu appends its gpu.module after the functions.)
// CHECK-LABEL:   func.func private @only_declarations(tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  // -----
func.func private @only_declarations(tensor<4xf32>) -> tensor<4xf32>

// -----

// A decode GEMM (M = 16 <= 64, N = 4096): one warpgroup per 64 x 32 tile
// (m64n32k16), so N = 4096 gives 128 tiles, each split in 2 along K: 256 blocks;
// four stages filled through TMA by a producer warp, A's boxes of 16 rows (M).
// CHECK-LABEL: func.func @matmul_decode(
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 64, 16>, swizzle = 128 : i64, tensor = 0 : i64}}
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 64, 32>, swizzle = 128 : i64, tensor = 1 : i64}}
// CHECK:         kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:      blocks in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c160{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @matmul_0(
// CHECK-SAME:    known_block_size = array<i32: 160, 1, 1>
// CHECK:         memref.view {{.*}} to memref<4x2x64x64xbf16, 3>
// CHECK:         memref.view {{.*}} to memref<4x2x32x64xbf16, 3>
// Each load brings 2 sub-tiles x (16 + 32) rows x 128 bytes.
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{c12288_i32[_0-9]*}}
// 16 f32 accumulators per thread.
// CHECK:         scf.for {{.*}} -> (!llvm.struct<([[F32X16:(f32, ){15}f32]])>) {
// CHECK-COUNT-8:   nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           scf.yield
func.func @matmul_decode(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  return %0 : tensor<16x4096xbf16>
}
