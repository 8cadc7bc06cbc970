// kopt-pack-operands: f16/bf16 matmuls whose operands are not K-contiguous, or
// whose K is not a multiple of 8, read packed copies ([M, K'] and [N, K'], K'
// = K rounded up to 8) when every copy is reused by at least min-reuse rows.
// RUN: kopt-opt %s --kopt-pack-operands | FileCheck %s
// RUN: kopt-opt %s --kopt-pack-operands="min-reuse=4096" | FileCheck %s --check-prefix=REUSE
// RUN: not kopt-opt %s --kopt-pack-operands="min-reuse=0" 2>&1 | FileCheck %s --check-prefix=BAD
// In --kopt-to-ptx (default pack-min-reuse=128) and turned off (0):
// RUN: rm -f %t.ptx %t.json %t.off.ptx %t.off.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: FileCheck %s --check-prefix=PIPE < %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.off.ptx pack-min-reuse=0" -o /dev/null
// RUN: FileCheck %s --check-prefix=OFF < %t.off.json
// PIPE: "class": "pack"
// OFF-NOT: "pack"
// The result is a fixed point: a second run changes nothing.
// RUN: kopt-opt %s --kopt-pack-operands | kopt-opt --kopt-pack-operands | FileCheck %s

// BAD: error: kopt-pack-operands: min-reuse (kopt-to-ptx's pack-min-reuse, where 0 turns packing off) must be at least 1, got 0

// K % 8 != 0 and B stored [K, N]: both operands are packed, B transposed.
// CHECK-LABEL: func.func @odd(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<4097x4093xbf16>, %[[B:[^:]*]]: tensor<4093x4095xbf16>
// CHECK:         %[[PA:.*]] = kopt.pack %[[A]] : tensor<4097x4093xbf16> -> tensor<4097x4096xbf16>
// CHECK-NEXT:    %[[PB:.*]] = kopt.pack %[[B]] {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4096xbf16>
// CHECK-NEXT:    %[[C:.*]] = kopt.matmul %[[PA]], %[[PB]] {transpose_b} : tensor<4097x4096xbf16>, tensor<4095x4096xbf16> -> tensor<4097x4095xf32>
// CHECK-NEXT:    return %[[C]]
// REUSE-LABEL: func.func @odd(
// REUSE-NOT:     kopt.pack
// REUSE:         kopt.matmul %{{.*}}, %{{.*}} : tensor<4097x4093xbf16>, tensor<4093x4095xbf16> -> tensor<4097x4095xf32>
func.func @odd(%a: tensor<4097x4093xbf16>, %b: tensor<4093x4095xbf16>) -> tensor<4097x4095xf32> {
  %c = kopt.matmul %a, %b : tensor<4097x4093xbf16>, tensor<4093x4095xbf16> -> tensor<4097x4095xf32>
  return %c : tensor<4097x4095xf32>
}

// K % 8 == 0: only the operands stored along M or N are copied, without padding.
// CHECK-LABEL: func.func @row_major_b(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<512x256xf16>, %[[B:[^:]*]]: tensor<256x1024xf16>
// CHECK-NEXT:    %[[PB:.*]] = kopt.pack %[[B]] {transpose} : tensor<256x1024xf16> -> tensor<1024x256xf16>
// CHECK-NEXT:    kopt.matmul %[[A]], %[[PB]] {transpose_b} : tensor<512x256xf16>, tensor<1024x256xf16> -> tensor<512x1024xf16>
func.func @row_major_b(%a: tensor<512x256xf16>, %b: tensor<256x1024xf16>) -> tensor<512x1024xf16> {
  %c = kopt.matmul %a, %b : tensor<512x256xf16>, tensor<256x1024xf16> -> tensor<512x1024xf16>
  return %c : tensor<512x1024xf16>
}

// CHECK-LABEL: func.func @transposed_a(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<256x512xbf16>, %[[B:[^:]*]]: tensor<1024x256xbf16>
// CHECK-NEXT:    %[[PA:.*]] = kopt.pack %[[A]] {transpose} : tensor<256x512xbf16> -> tensor<512x256xbf16>
// CHECK-NEXT:    kopt.matmul %[[PA]], %[[B]] {transpose_b} : tensor<512x256xbf16>, tensor<1024x256xbf16> -> tensor<512x1024xbf16>
func.func @transposed_a(%a: tensor<256x512xbf16>, %b: tensor<1024x256xbf16>) -> tensor<512x1024xbf16> {
  %c = kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<256x512xbf16>, tensor<1024x256xbf16> -> tensor<512x1024xbf16>
  return %c : tensor<512x1024xbf16>
}

// f32 with tf32 (wgmma through TMA): rows padded to a multiple of 16 bytes
// (4 f32), B transposed; the copy keeps tf32.
// CHECK-LABEL: func.func @tf32(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<512x1001xf32>, %[[B:[^:]*]]: tensor<1001x1024xf32>
// CHECK-NEXT:    %[[PA:.*]] = kopt.pack %[[A]] : tensor<512x1001xf32> -> tensor<512x1004xf32>
// CHECK-NEXT:    %[[PB:.*]] = kopt.pack %[[B]] {transpose} : tensor<1001x1024xf32> -> tensor<1024x1004xf32>
// CHECK-NEXT:    kopt.matmul %[[PA]], %[[PB]] {tf32, transpose_b} : tensor<512x1004xf32>, tensor<1024x1004xf32> -> tensor<512x1024xf32>
func.func @tf32(%a: tensor<512x1001xf32>, %b: tensor<1001x1024xf32>) -> tensor<512x1024xf32> {
  %c = kopt.matmul %a, %b {tf32} : tensor<512x1001xf32>, tensor<1001x1024xf32> -> tensor<512x1024xf32>
  return %c : tensor<512x1024xf32>
}

// Left alone: operands already K-contiguous with K % 8 == 0; f32 without tf32
// (FFMA reads any layout); decode (M = 16 < 128: copying B would cost more than the GEMM);
// and K % 8 != 0 when one of the two copies would not be reused enough.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     kopt.pack
// CHECK:         return
func.func @left_alone(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>, %wt: tensor<4096x4096xbf16>,
                      %f: tensor<512x4093xf32>, %g: tensor<4093x512xf32>,
                      %s: tensor<512x65xf16>, %t: tensor<17x65xf16>)
    -> (tensor<16x4096xbf16>, tensor<16x4096xbf16>, tensor<512x512xf32>, tensor<512x17xf16>) {
  %0 = kopt.matmul %x, %wt {transpose_b} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %1 = kopt.matmul %x, %w : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %2 = kopt.matmul %f, %g : tensor<512x4093xf32>, tensor<4093x512xf32> -> tensor<512x512xf32>
  %3 = kopt.matmul %s, %t {transpose_b} : tensor<512x65xf16>, tensor<17x65xf16> -> tensor<512x17xf16>
  return %0, %1, %2, %3 : tensor<16x4096xbf16>, tensor<16x4096xbf16>, tensor<512x512xf32>, tensor<512x17xf16>
}

// One copy per operand and layout: B is packed once for both matmuls.
// CHECK-LABEL: func.func @shared_operand(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<256x1000xbf16>, %[[Y:[^:]*]]: tensor<512x1000xbf16>, %[[B:[^:]*]]: tensor<1000x300xbf16>
// CHECK-NEXT:    %[[PB:.*]] = kopt.pack %[[B]] {transpose} : tensor<1000x300xbf16> -> tensor<300x1000xbf16>
// CHECK-NEXT:    kopt.matmul %[[X]], %[[PB]] {transpose_b}
// CHECK-NEXT:    kopt.matmul %[[Y]], %[[PB]] {transpose_b}
// CHECK-NOT:     kopt.pack
func.func @shared_operand(%x: tensor<256x1000xbf16>, %y: tensor<512x1000xbf16>, %b: tensor<1000x300xbf16>) -> (tensor<256x300xbf16>, tensor<512x300xbf16>) {
  %0 = kopt.matmul %x, %b : tensor<256x1000xbf16>, tensor<1000x300xbf16> -> tensor<256x300xbf16>
  %1 = kopt.matmul %y, %b : tensor<512x1000xbf16>, tensor<1000x300xbf16> -> tensor<512x300xbf16>
  return %0, %1 : tensor<256x300xbf16>, tensor<512x300xbf16>
}
