// kopt-tile on pack kernels (kopt.pack: a copy generic, the identity
// or the transpose, then tensor.pad with zeros): 64 x 64 result tiles, one per
// block of 256 threads; the transposed copy goes through a [64][65] shared tile
// with a barrier between reading and writing; elements outside the source are
// zeros from a clamped load and a select. PTX assembled by ptxas.
// (Diagnostics: lower-to-gpu-invalid.mlir.)
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// 4095 x 4096 result: 64 x 64 tiles = 4096 blocks.
// CHECK-LABEL: func.func @transposed(
// CHECK:         kopt.launch @kopt_kernels::@pack_0 blocks in (%{{c4096[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}}) threads in (%{{c256[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}})
// CHECK-SAME:      {kernel_class = "pack", num_inputs = 1 : i64, num_outputs = 1 : i64, source = {attrs = {transpose = true}, name = "pack", params = ["input", "result"]}}
// CHECK:       gpu.func @pack_0(%[[SRC:.*]]: memref<4093x4095xbf16>, %[[DST:.*]]: memref<4095x4096xbf16>) workgroup(%[[TILE:.*]] : memref<64x65xbf16, #gpu.address_space<workgroup>>) kernel
// CHECK:         arith.minui
// CHECK:         %[[V:.*]] = memref.load %[[SRC]]
// CHECK:         arith.select %{{.*}}, %[[V]], %{{.*}} : bf16
// CHECK:         memref.store %{{.*}}, %[[TILE]]
// CHECK:         gpu.barrier
// CHECK:         scf.if
// CHECK:           memref.load %[[TILE]]
// CHECK:           memref.store %{{.*}}, %[[DST]]
// JSON:          "name": "pack_0",
// JSON-NEXT:     "class": "pack",
// JSON-NEXT:     "ops": [
// JSON-NEXT:       {
// JSON-NEXT:         "op": "pack",
// JSON-NEXT:         "attrs": {
// JSON-NEXT:           "transpose": true
// JSON:          "grid": [
// JSON-NEXT:       4096,
func.func @transposed(%b: tensor<4093x4095xbf16>) -> tensor<4095x4096xbf16> {
  %p = kopt.pack %b {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4096xbf16>
  return %p : tensor<4095x4096xbf16>
}

// -----

// Padding only: no shared memory, each thread copies its elements.
// CHECK-LABEL: func.func @padded(
// CHECK:         kopt.launch @kopt_kernels::@pack_0 blocks in (%{{c4160[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}})
// CHECK:       gpu.func @pack_0(%[[SRC:.*]]: memref<4097x4093xf16>, %[[DST:.*]]: memref<4097x4096xf16>) kernel
// CHECK-NOT:     gpu.barrier
// CHECK:         scf.if
// CHECK:           memref.load %[[SRC]]
// CHECK:           memref.store %{{.*}}, %[[DST]]
func.func @padded(%a: tensor<4097x4093xf16>) -> tensor<4097x4096xf16> {
  %p = kopt.pack %a : tensor<4097x4093xf16> -> tensor<4097x4096xf16>
  return %p : tensor<4097x4096xf16>
}

// -----

// A transposing copy without padding is a pack kernel as well.
// CHECK-LABEL: func.func @transpose_only(
// CHECK:         kopt.launch @kopt_kernels::@pack_0 blocks in (%{{c1[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}})
// CHECK-SAME:      kernel_class = "pack"
// CHECK:       gpu.func @pack_0({{.*}}: memref<7x33xf32>, {{.*}}: memref<33x7xf32>) workgroup({{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>) kernel
func.func @transpose_only(%x: tensor<7x33xf32>) -> tensor<33x7xf32> {
  %p = kopt.pack %x {transpose} : tensor<7x33xf32> -> tensor<33x7xf32>
  return %p : tensor<33x7xf32>
}
