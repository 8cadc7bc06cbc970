// TF32 (kopt.matmul {tf32} on f32 operands) in kopt-tile and kopt-pipeline: wgmma
// m64nNk8 with tf32 operands, filled by TMA: 128-byte rows of 32 f32 elements,
// boxes of 32 x block rows, one wgmma K step per 8 elements (32 bytes).
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-tf32.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-tf32.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// Without tf32 an f32 matmul never gets tensor cores, with or without a file:
// RUN: not kopt-opt %S/Inputs/f32-matmul.mlir --kopt-to-ptx="output=%t-x.ptx" --kopt-schedule=%S/Inputs/schedule-tf32.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXACT
// RUN: kopt-space --shape=4096x4096x4096 --dtype=f32 --transpose-b --check=%S/Inputs/schedule-tf32.json --tf32 | FileCheck %s --check-prefix=SPACE
// RUN: not kopt-space --shape=64x64x64 --dtype=bf16 --tf32 --default 2>&1 | FileCheck %s --check-prefix=SPACE-BF16
// RUN: kopt-space --shape=4096x4096x4096 --dtype=f32 --transpose-b --tf32 | FileCheck %s --check-prefix=KEY
// The default with tf32 above M = 64: 128 x 256 x 32 wgmma tiles through TMA.
// RUN: kopt-space --shape=4096x4096x4096 --dtype=f32 --transpose-b --tf32 --default | FileCheck %s --check-prefix=DEFAULT

// CHECK-LABEL: func.func @tf32(
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 32, 128>, swizzle = 128 : i64, tensor = 0 : i64}} 0 : i64
// CHECK:         arith.constant {kopt.tensor_map = {box = array<i64: 32, 256>, swizzle = 128 : i64, tensor = 1 : i64}} 0 : i64
// CHECK:       gpu.func @matmul_0(%{{.*}}: memref<4096x4096xf32>, %{{.*}}: memref<4096x4096xf32>, %{{.*}}: memref<4096x4096xf32>, %{{.*}}: i64, %{{.*}}: i64)
// CHECK:         memref.view {{.*}} to memref<4x1x128x32xf32, 3>
// CHECK:         memref.view {{.*}} to memref<4x1x256x32xf32, 3>
// 128 + 256 rows of 128 bytes per stage.
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{c49152_i32.*}}
// CHECK:         scf.for
// CHECK-COUNT-4:   nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           scf.yield

// PTX: wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32

// JSON:      "op": "matmul",
// JSON:      "attrs": {
// JSON-NEXT:   "transpose_a": false,
// JSON-NEXT:   "transpose_b": true,
// JSON-NEXT:   "tf32": true
// JSON:      "dtype": "f32",
// JSON:      "tensor": "a",
// JSON-NEXT: "box": [
// JSON-NEXT:   32,
// JSON-NEXT:   128

// EXACT: error: 'kopt.kernel' op schedule is invalid for matmul/4096x4096x4096/f32,f32->f32/ak,bk/sm_90a: wgmma needs f16 or bf16 operands of one type, or f32 ones with TF32 allowed (kopt.matmul {tf32}) (got f32 x f32)

// SPACE: "valid": true

// KEY: "key": "matmul/4096x4096x4096/f32,f32->f32+tf32/ak,bk/sm_90a"
// KEY: "tf32": true

// DEFAULT: "block_k": 32,
// DEFAULT: "block_m": 128,
// DEFAULT: "block_n": 256,
// DEFAULT: "copy": "tma",
// DEFAULT: "instruction": "wgmma",

// SPACE-BF16: --tf32 applies to f32 operands (--dtype=f32)

func.func @tf32(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %0 = kopt.matmul %a, %b {transpose_b, tf32} : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
  return %0 : tensor<4096x4096xf32>
}
