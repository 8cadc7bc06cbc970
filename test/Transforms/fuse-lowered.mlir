// kopt-fuse groups kopt tensor ops only: a kopt.launch (made by
// kopt-lower-to-gpu) is left as it is, not wrapped in a kopt.kernel.
// RUN: kopt-opt %s --kopt-fuse | FileCheck %s

// CHECK-LABEL: func.func @lowered(
// CHECK-NOT:     kopt.kernel
// CHECK:         kopt.launch @kernels::@k
// CHECK-NOT:     kopt.kernel
func.func @lowered(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x, %y : memref<4xf32>, memref<4xf32>) {kernel_class = "elementwise", num_inputs = 1, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
    gpu.return
  }
}
