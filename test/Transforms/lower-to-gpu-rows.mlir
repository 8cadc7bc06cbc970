// kopt-lower-to-gpu's row kernels (lib/KernelBuilders/Row.cpp): T threads per
// row and R rows per block as the row plan picks them, rows held in registers
// when they fit (each input loaded once), loops over longer rows, shuffle trees
// over a row's lanes, shared memory across a row's warps, a last chunk clamped
// inside the row, rows past the end computed on the last row and not stored, and
// row ops fused with elementwise ops (several outputs), long rows split across
// a thread-block cluster (remote stores of each block's value, cluster barriers).
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// The output verifies and re-parses.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | kopt-opt -split-input-file -o /dev/null
// The PTX assembles (every launch shape below).
// RUN: kopt-opt %s -split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// Chips without thread-block clusters (sm_80, sm_86, sm_89) keep a row per
// block and loop.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile="chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: kopt-opt %s -split-input-file --kopt-to-ptx="output=%t80.ptx chip=sm_80" -o /dev/null
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin

// Index constants print as %c<value> or %c<value>_<n>; {{C}}-style patterns below
// match either.

// A row too long even for the registers of a cluster (1048576 f32 columns, more
// than 8 blocks x 1024 threads x 32): each row splits across a cluster of 8
// blocks of 1024 threads (32 blocks for 4 rows), and each reduction and the
// output loop over the row with a stride of 8 x 1024 lanes.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[X:[^:]*]]: memref<4x1048576xf32>, %[[OUT:[^:]*]]: memref<4x1048576xf32>)
// CHECK:         kopt.launch @kopt_kernels::@softmax_0
// CHECK-SAME:      blocks in (%c32{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c1024{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      args(%[[X]], %[[OUT]] : memref<4x1048576xf32>, memref<4x1048576xf32>)
// CHECK-SAME:      cluster_size = array<i32: 8, 1, 1>, kernel_class = "row", num_inputs = 1 : i64
// One f32 slot per warp in workgroup memory, and 8 cluster slots per reduction.
// CHECK:       gpu.func @softmax_0(%[[IN:.*]]: memref<4x1048576xf32>, %[[O:.*]]: memref<4x1048576xf32>)
// CHECK-SAME:    workgroup(%[[SMEM:.*]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[SLOTS:.*]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 1024, 1, 1>, known_cluster_size = array<i32: 8, 1, 1>}
// CHECK:         %[[TID:.*]] = gpu.thread_id x
// The block's rank in its cluster and the row (the cluster); the thread's lane
// over the row is rank * 1024 + t.
// CHECK:         %[[BID:.*]] = gpu.block_id x
// CHECK:         %[[RANK:.*]] = arith.remui %[[BID]], %c8{{(_[0-9]+)?}} : index
// CHECK:         %[[ROW:.*]] = arith.divui %[[BID]], %c8{{(_[0-9]+)?}} : index
// CHECK:         %[[RL:.*]] = arith.muli %[[RANK]], %c1024{{(_[0-9]+)?}} : index
// CHECK-NEXT:    %[[LANE:.*]] = arith.addi %[[RL]], %[[TID]] : index
// Every block of the cluster has started before the first remote store.
// CHECK-NEXT:    nvvm.cluster.arrive.relaxed {aligned}
// 16-byte accesses: 4 f32 columns per lane per step, lane l starts at column 4l
// and steps by 4 * 8 * 1024.
// CHECK:         %[[FIRST:.*]] = arith.muli %[[LANE]], %c4{{(_[0-9]+)?}} : index
// Reduction 1: the row max, each thread over columns [4l, 4l + 4), then 32768 on, ...
// CHECK:         %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[PMAX:.*]] = scf.for %[[J:.*]] = %[[FIRST]] to %c1048576{{(_[0-9]+)?}} step %c32768{{(_[0-9]+)?}} iter_args(%[[ACC:.*]] = %[[NINF]]) -> (f32) {
// CHECK-NEXT:      %[[V:.*]] = vector.load %[[IN]][%[[ROW]], %[[J]]] {alignment = 16 : i64} : memref<4x1048576xf32>, vector<4xf32>
// CHECK-NEXT:      %[[V0:.*]] = vector.extract %[[V]][0] : f32 from vector<4xf32>
// CHECK-NEXT:      %[[V1:.*]] = vector.extract %[[V]][1] : f32 from vector<4xf32>
// CHECK-NEXT:      vector.extract %[[V]][2]
// CHECK-NEXT:      vector.extract %[[V]][3]
// CHECK-NEXT:      %[[M0:.*]] = arith.maximumf %[[V0]], %[[ACC]] : f32
// CHECK-NEXT:      %[[M1:.*]] = arith.maximumf %[[V1]], %[[M0]] : f32
// CHECK-COUNT-2:   arith.maximumf
// CHECK-NEXT:      scf.yield %{{.*}} : f32
// CHECK-NEXT:    }
// The warp's shuffle tree (xor 16, 8, 4, 2, 1 over 32 lanes) ...
// CHECK:         %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[PMAX]], %c16_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NEXT:    %[[W16:.*]] = arith.maximumf %[[PMAX]], %[[S16]] : f32
// CHECK:         gpu.shuffle xor %[[W16]], %c8_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %c4_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[W2:.*]], %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NEXT:    %[[WMAX:.*]] = arith.maximumf %[[W2]], %[[S1]] : f32
// ... lane 0 of each warp publishes its value in shared memory ...
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      memref.store %[[WMAX]], %[[SMEM]][%{{.*}}] : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.barrier
// ... every warp reduces the 32 published values (identity for missing warps) ...
// CHECK:         %[[PUB:.*]] = memref.load %[[SMEM]][%{{.*}}] : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:    %[[SEL:.*]] = arith.select %{{.*}}, %[[PUB]], %[[NINF]] : f32
// CHECK-NEXT:    %c16_i32{{.*}} = arith.constant 16 : i32
// CHECK-NEXT:    %c32_i32{{.*}} = arith.constant 32 : i32
// CHECK-NEXT:    gpu.shuffle xor %[[SEL]]
// CHECK:         %[[T1:.*]], %{{.*}} = gpu.shuffle xor %[[T2:.*]], %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NEXT:    %[[BMAX:.*]] = arith.maximumf %[[T2]], %[[T1]] : f32
// CHECK-NEXT:    gpu.barrier
// ... and across the cluster: thread 0 stores the block's max into slot `rank` of
// all 8 blocks (slots 0-7: the first reduction's) ...
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK:         scf.if %{{.*}} {
// CHECK:           %[[SLOT:.*]] = arith.addi %[[RANK]], %c0{{(_[0-9]+)?}} : index
// CHECK:           %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[SLOTS]]
// CHECK:           %[[LOCAL:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK:           %[[R0:.*]] = nvvm.mapa %[[LOCAL]], %c0_i32{{(_[0-9]+)?}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT:      llvm.store %[[BMAX]], %[[R0]] : f32, !llvm.ptr<7>
// CHECK-COUNT-7:   llvm.store %[[BMAX]], %{{.*}} : f32, !llvm.ptr<7>
// CHECK-NEXT:    }
// ... a cluster barrier publishes them, and every thread combines them in rank order.
// CHECK-NEXT:    nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK:         %[[C0:.*]] = memref.load %[[SLOTS]][%c0{{(_[0-9]+)?}}]
// CHECK:         %[[C1:.*]] = memref.load %[[SLOTS]][%c1{{(_[0-9]+)?}}]
// CHECK-NEXT:    %[[CM1:.*]] = arith.maximumf %[[C0]], %[[C1]] : f32
// CHECK-COUNT-6: arith.maximumf
// CHECK-NOT:     nvvm.cluster
// Reduction 2: the sum of exp(x - max), with the same trees; slots 8-15.
// CHECK:         scf.for %{{.*}} = %[[FIRST]] to %c1048576{{(_[0-9]+)?}} step %c32768{{(_[0-9]+)?}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK-NEXT:      arith.addf
// CHECK:         gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK:         gpu.barrier
// CHECK-NOT:     nvvm.cluster.wait
// CHECK:         nvvm.mapa
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK:         memref.load %[[SLOTS]][%c8{{(_[0-9]+)?}}]
// CHECK:         memref.load %[[SLOTS]][%c15{{(_[0-9]+)?}}]
// The output loop: exp(x - max) * (1 / sum), stored; no cluster access after the
// last barrier (a block may exit).
// CHECK:         scf.for %[[J2:.*]] = %[[FIRST]] to %c1048576{{(_[0-9]+)?}} step %c32768{{(_[0-9]+)?}} {
// CHECK-NEXT:      vector.load %[[IN]][%[[ROW]], %[[J2]]]
// CHECK-COUNT-4:   arith.mulf
// CHECK:           vector.from_elements
// CHECK-NEXT:      vector.store %{{.*}}, %[[O]][%[[ROW]], %[[J2]]] {alignment = 16 : i64} : memref<4x1048576xf32>, vector<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
func.func @softmax(%x: tensor<4x1048576xf32>) -> tensor<4x1048576xf32> {
  %0 = kopt.softmax %x : tensor<4x1048576xf32>
  return %0 : tensor<4x1048576xf32>
}

// -----

// Qwen3's vocabulary softmax at decode (16 rows of 151936 bf16): a row per
// cluster of 8 blocks (128 blocks, one per SM), 3 chunks of 8 columns per
// thread, held in registers: x is loaded once, the last chunk is clamped
// inside the row.
// CHECK-LABEL: func.func @vocab_softmax(
// CHECK:         kopt.launch @kopt_kernels::@softmax_0
// CHECK-SAME:      blocks in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c1024{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      cluster_size = array<i32: 8, 1, 1>
// CHECK:       gpu.func @softmax_0(%[[IN:.*]]: memref<16x151936xbf16>, %{{.*}}: memref<16x151936xbf16>)
// CHECK-SAME:    known_cluster_size = array<i32: 8, 1, 1>
// CHECK-COUNT-3: vector.load %[[IN]]
// CHECK-NOT:     vector.load %[[IN]]
// CHECK-NOT:     scf.for
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NOT:     nvvm.cluster.arrive
// CHECK-COUNT-3: vector.store %{{.*}} : memref<16x151936xbf16>, vector<8xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
// SM80-LABEL: func.func @vocab_softmax(
// SM80:         kopt.launch @kopt_kernels::@softmax_0
// SM80-SAME:      blocks in (%c16{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// SM80-SAME:      threads in (%c1024{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// SM80-NOT:       cluster_size
// SM80:         gpu.func @softmax_0(
// SM80-NOT:       known_cluster_size
// SM80-NOT:       nvvm.cluster
// SM80:           scf.for
// SM80-NOT:       nvvm.cluster
// SM80:           gpu.return
func.func @vocab_softmax(%x: tensor<16x151936xbf16>) -> tensor<16x151936xbf16> {
  %0 = kopt.softmax %x : tensor<16x151936xbf16>
  return %0 : tensor<16x151936xbf16>
}

// -----

// 16 rows of 4096 bf16 (decode): with a row per block and few rows, a row spreads
// over 512 threads, one chunk of 8 columns each: x is loaded once, for the sum of
// squares and for the output; the weight is read per column; 16 warps' partials
// in shared memory.
// CHECK-LABEL: func.func @rmsnorm(
// CHECK:         kopt.launch @kopt_kernels::@rmsnorm_0
// CHECK-SAME:      blocks in (%c16{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c512{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      kernel_class = "row", num_inputs = 2 : i64, num_outputs = 1 : i64, source = {attrs = {eps = 9.99999974E-6 : f32}, name = "rmsnorm", params = ["input", "weight", "result"]}
// CHECK:       gpu.func @rmsnorm_0(%[[X:.*]]: memref<16x4096xbf16>, %[[W:.*]]: memref<4096xbf16>, %[[O:.*]]: memref<16x4096xbf16>)
// CHECK-SAME:    workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME:    known_block_size = array<i32: 512, 1, 1>
// CHECK-NOT:     scf.for
// CHECK:         %[[XV:.*]] = vector.load %[[X]][%{{.*}}, %[[J:.*]]] {alignment = 16 : i64} : memref<16x4096xbf16>, vector<8xbf16>
// CHECK-NOT:     vector.load %[[X]]
// CHECK:         gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK:         %[[T1:.*]], %{{.*}} = gpu.shuffle xor %[[T2:.*]], %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NEXT:    %[[TOT:.*]] = arith.addf %[[T2]], %[[T1]] : f32
// CHECK-NEXT:    gpu.barrier
// CHECK:         %[[N:.*]] = arith.constant 4.096000e+03 : f32
// CHECK-NEXT:    %[[MS:.*]] = arith.divf %[[TOT]], %[[N]] : f32
// CHECK-NEXT:    %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT:    %[[MSE:.*]] = arith.addf %[[MS]], %[[EPS]] : f32
// CHECK-NEXT:    %[[RSTD:.*]] = math.rsqrt %[[MSE]] : f32
// CHECK-NOT:     vector.load %[[X]]
// CHECK:         %[[WV:.*]] = vector.load %[[W]][%[[J]]] {alignment = 16 : i64} : memref<4096xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.mulf %{{.*}}, %[[RSTD]] : f32
// CHECK:         vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-NEXT:    vector.store %{{.*}}, %[[O]][%{{.*}}, %[[J]]] {alignment = 16 : i64} : memref<16x4096xbf16>, vector<8xbf16>
// CHECK-NEXT:    gpu.return
func.func @rmsnorm(%x: tensor<16x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<16x4096xbf16> {
  %0 = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  return %0 : tensor<16x4096xbf16>
}

// -----

// Short rows (Qwen3's q_norm over head_dim 128, 65536 rows): a row of 16
// accesses takes 16 threads, one chunk of 8 columns each (columns 8t), 16 rows
// per block of 256 threads; the row's shuffle tree is xor 8, 4, 2, 1; no shared
// memory, no barrier.
// CHECK-LABEL: func.func @short_rows(
// CHECK:         kopt.launch @kopt_kernels::@rmsnorm_0
// CHECK-SAME:      blocks in (%c4096{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @rmsnorm_0(%[[X:.*]]: memref<65536x128xbf16>, %{{.*}}: memref<128xbf16>, %[[O:.*]]: memref<65536x128xbf16>) kernel
// CHECK:         %[[TID:.*]] = gpu.thread_id x
// CHECK:         %[[BID:.*]] = gpu.block_id x
// CHECK:         %[[LANE:.*]] = arith.remui %[[TID]], %c16{{(_[0-9]+)?}} : index
// CHECK:         %[[RIB:.*]] = arith.divui %[[TID]], %c16{{(_[0-9]+)?}} : index
// CHECK:         %[[R0:.*]] = arith.muli %[[BID]], %c16{{(_[0-9]+)?}} : index
// CHECK:         %[[ROW:.*]] = arith.addi %[[R0]], %[[RIB]] : index
// CHECK:         %[[C0:.*]] = arith.muli %[[LANE]], %c8{{(_[0-9]+)?}} : index
// CHECK:         vector.load %[[X]][%[[ROW]], %[[C0]]]
// CHECK-NOT:     vector.load %[[X]]
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.shuffle xor %{{.*}}, %c8_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %c4_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NOT:     gpu.shuffle
// CHECK:         math.rsqrt
// CHECK:         vector.store %{{.*}}, %[[O]][%[[ROW]], %[[C0]]]
// CHECK-NOT:     vector.store
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.return
func.func @short_rows(%x: tensor<65536x128xbf16>, %w: tensor<128xbf16>) -> tensor<65536x128xbf16> {
  %0 = kopt.rmsnorm %x weight(%w : tensor<128xbf16>) eps = 1.0e-06 : tensor<65536x128xbf16>
  return %0 : tensor<65536x128xbf16>
}

// -----

// 8 columns (Mixtral's router over 8 experts): two threads per row, one chunk of
// 4 each, one shuffle (xor 1) per reduction; 16 rows per block (fewer than 128 so
// that the grid has 4096 / 16 = 256 blocks, at least a warp per block).
// CHECK-LABEL: func.func @router(
// CHECK:         kopt.launch @kopt_kernels::@softmax_0
// CHECK-SAME:      blocks in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c32{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @softmax_0(
// CHECK-NOT:     gpu.barrier
// CHECK:         vector.load
// CHECK-NOT:     vector.load
// CHECK:         gpu.shuffle xor %{{.*}}, %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK-NOT:     gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK:         gpu.shuffle xor %{{.*}}, %c1_i32{{(_[0-9]+)?}}, %c32_i32{{(_[0-9]+)?}} : f32
// CHECK:         vector.store
// CHECK-NOT:     vector.store
// CHECK:         gpu.return
func.func @router(%x: tensor<4096x8xf32>) -> tensor<4096x8xf32> {
  %0 = kopt.softmax %x : tensor<4096x8xf32>
  return %0 : tensor<4096x8xf32>
}

// -----

// 2 * 3 rows of 4 columns (one access): a thread per row, 32 rows per block, so
// threads 6 to 31 compute on the last row (clamped) and store nothing; a rank-3
// input splits the row index into both leading dimensions.
// CHECK-LABEL: func.func @reduce_rank3(
// CHECK:         kopt.launch @kopt_kernels::@reduce_0
// CHECK-SAME:      blocks in (%c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c32{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @reduce_0(%[[X:.*]]: memref<2x3x4xf32>, %[[O:.*]]: memref<2x3xf32>)
// CHECK-SAME:    known_block_size = array<i32: 32, 1, 1>
// CHECK:         %[[ROW:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:         %[[VALID:.*]] = arith.cmpi ult, %[[ROW]], %c6{{(_[0-9]+)?}} : index
// CHECK:         %[[LAST:.*]] = arith.minui %[[ROW]], %c5{{(_[0-9]+)?}} : index
// CHECK:         %[[R1:.*]] = arith.remui %[[LAST]], %c3{{(_[0-9]+)?}} : index
// CHECK:         %[[R0:.*]] = arith.divui %[[LAST]], %c3{{(_[0-9]+)?}} : index
// CHECK:         vector.load %[[X]][%[[R0]], %[[R1]], %{{.*}}] {alignment = 16 : i64} : memref<2x3x4xf32>, vector<4xf32>
// CHECK-NOT:     vector.load
// CHECK-NOT:     gpu.shuffle
// The row's first (only) thread stores the sum divided by 4, if its row exists.
// CHECK:         arith.divf
// CHECK:         %[[IS0:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:         %[[ST:.*]] = arith.andi %[[IS0]], %[[VALID]] : i1
// CHECK-NEXT:    scf.if %[[ST]] {
// CHECK-NEXT:      memref.store %{{.*}}, %[[O]][%[[R0]], %[[R1]]] : memref<2x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
func.func @reduce_rank3(%x: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  %0 = kopt.reduce mean %x : tensor<2x3x4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A rank-1 input: one row, one block of 1024 threads (one chunk of 4 each), the
// result a rank-0 memref.
// CHECK-LABEL: func.func @reduce_rank1(
// CHECK-SAME:    memref<4096xf32>, %{{.*}}: memref<bf16>)
// CHECK:         kopt.launch @kopt_kernels::@reduce_0
// CHECK-SAME:      blocks in (%c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c1024{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK:       gpu.func @reduce_0(%{{.*}}: memref<4096xf32>, %[[O:.*]]: memref<bf16>)
// CHECK:         arith.maximumf
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         memref.store %{{.*}}, %[[O]][] : memref<bf16>
func.func @reduce_rank1(%x: tensor<4096xf32>) -> tensor<bf16> {
  %0 = kopt.reduce max %x : tensor<4096xf32> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// layernorm over 1600 f32 columns, 8 rows: 512 threads of one chunk of 4, so
// threads 400 to 511 are past the row: their loads are clamped to column 1596,
// their values left out of both reductions (sum, then centred squares: each a
// warp tree, 16 warps through shared memory, a barrier), their stores skipped.
// CHECK-LABEL: func.func @layernorm(
// CHECK:         kopt.launch @kopt_kernels::@layernorm_0
// CHECK-SAME:      blocks in (%c8{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c512{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      num_inputs = 3 : i64, num_outputs = 1 : i64, source = {attrs = {eps = 9.99999974E-6 : f32}, name = "layernorm", params = ["input", "weight", "bias", "result"]}
// CHECK:       gpu.func @layernorm_0(%[[X:.*]]: memref<8x1600xf32>, %[[W:.*]]: memref<1600xf32>, %[[B:.*]]: memref<1600xf32>, %[[O:.*]]: memref<8x1600xf32>)
// CHECK-SAME:    workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK:         %[[IN:.*]] = arith.cmpi ult, %[[COL:.*]], %c1600{{(_[0-9]+)?}} : index
// CHECK:         %[[CL:.*]] = arith.minui %[[COL]], %c1596{{(_[0-9]+)?}} : index
// CHECK:         vector.load %[[X]][%{{.*}}, %[[CL]]]
// CHECK:         %[[P1:.*]] = arith.select %[[IN]], %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %c16_i32{{.*}} = arith.constant 16 : i32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK-NOT:     vector.load %[[X]]
// CHECK:         arith.select %[[IN]], %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         gpu.barrier
// CHECK-NOT:     gpu.shuffle
// CHECK:         math.rsqrt
// CHECK:         vector.load %[[W]][%[[CL]]] {{.*}} : memref<1600xf32>, vector<4xf32>
// CHECK:         vector.load %[[B]][%[[CL]]] {{.*}} : memref<1600xf32>, vector<4xf32>
// CHECK:         scf.if %[[IN]] {
// CHECK:           vector.store %{{.*}}, %[[O]][%{{.*}}, %[[CL]]]
// CHECK:         gpu.return
func.func @layernorm(%x: tensor<8x1600xf32>, %w: tensor<1600xf32>, %b: tensor<1600xf32>) -> tensor<8x1600xf32> {
  %0 = kopt.layernorm %x weight(%w : tensor<1600xf32>) bias(%b : tensor<1600xf32>) eps = 1.0e-05 : tensor<8x1600xf32>
  return %0 : tensor<8x1600xf32>
}

// -----

// add + RMSNorm fused (kopt-fuse), 2048 rows of 2048 bf16: 128 threads per row
// (16 elements each: 2 chunks of 8), 2 rows per block; h and a are each loaded
// once, their sum stored (the first output) and kept for the sum of squares and
// the output; each row's 4 warps publish in their own slots (row in block * 4 +
// warp).
// CHECK-LABEL: func.func @add_rmsnorm(
// CHECK:         kopt.launch @kopt_kernels::@add_rmsnorm_0
// CHECK-SAME:      blocks in (%c1024{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      threads in (%c256{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}})
// CHECK-SAME:      num_inputs = 3 : i64, num_outputs = 2 : i64
// CHECK:       gpu.func @add_rmsnorm_0(%[[H:.*]]: memref<2048x2048xbf16>, %[[A:.*]]: memref<2048x2048xbf16>, %[[W:.*]]: memref<2048xbf16>, %[[S:.*]]: memref<2048x2048xbf16>, %[[Y:.*]]: memref<2048x2048xbf16>)
// CHECK-SAME:    workgroup(%[[SMEM:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-2: vector.store %{{.*}}, %[[S]]
// CHECK-NOT:     vector.store %{{.*}}, %[[S]]
// CHECK-NOT:     vector.load %[[H]]
// CHECK-NOT:     vector.load %[[A]]
// CHECK:         %[[RIB:.*]] = arith.muli %{{.*}}, %c4{{(_[0-9]+)?}} : index
// CHECK:         %[[SLOT:.*]] = arith.addi %[[RIB]], %{{.*}} : index
// CHECK:         memref.store %{{.*}}, %[[SMEM]][%[[SLOT]]]
// CHECK-NOT:     vector.load %[[H]]
// CHECK-NOT:     vector.load %[[A]]
// CHECK-COUNT-2: vector.store %{{.*}}, %[[Y]]
// CHECK-NOT:     vector.store
// CHECK:         gpu.return
func.func @add_rmsnorm(%h: tensor<2048x2048xbf16>, %a: tensor<2048x2048xbf16>, %w: tensor<2048xbf16>) -> (tensor<2048x2048xbf16>, tensor<2048x2048xbf16>) {
  %s = kopt.add %h, %a : tensor<2048x2048xbf16>, tensor<2048x2048xbf16> -> tensor<2048x2048xbf16>
  %y = kopt.rmsnorm %s weight(%w : tensor<2048xbf16>) eps = 1.0e-05 : tensor<2048x2048xbf16>
  return %s, %y : tensor<2048x2048xbf16>, tensor<2048x2048xbf16>
}

// -----

// A fused consumer of a row too long for registers: the cast runs in the output
// loop (the third loop, after the max and the sum of exps).
// CHECK-LABEL: func.func @softmax_cast_loops(
// CHECK:       gpu.func @softmax_cast_0(%[[X:.*]]: memref<2x70001xf32>, %[[O:.*]]: memref<2x70001xbf16>)
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           memref.store %{{.*}}, %[[O]]
// CHECK-NOT:     scf.for
// CHECK:         gpu.return
func.func @softmax_cast_loops(%x: tensor<2x70001xf32>) -> tensor<2x70001xbf16> {
  %y = kopt.softmax %x : tensor<2x70001xf32>
  %c = kopt.cast %y : tensor<2x70001xf32> to tensor<2x70001xbf16>
  return %c : tensor<2x70001xbf16>
}
