// The launch manifest of fused elementwise kernels (kopt-fuse): each kernel's
// ops[] lists every op with its operands (kernel inputs, internal values, an
// output read again) and result; internal values are listed in values[]. The
// manifest passes the manifest library's validator (kopt-opt runs it; kopt-run's
// reader: manifest-fused-kopt-run.mlir), the PTX has one entry per kernel with
// one parameter per input and output, and ptxas accepts it.
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %python %S/Inputs/manifest-summary.py %t.json %t.ptx | FileCheck %s
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// Fusion off: one kernel per op, as before.
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.off.ptx fuse=false" -o /dev/null
// RUN: %python %S/Inputs/manifest-summary.py %t.off.json %t.off.ptx | FileCheck %s --check-prefix=OFF

// CHECK:      kernel div_tanh_mul_0 class=elementwise grid=[1,1,1] block=[256,1,1] smem=0
// CHECK-NEXT:   op div attrs={} lhs=in0 rhs=in1 -> t0
// CHECK-NEXT:   op tanh attrs={} input=t0 -> t1
// CHECK-NEXT:   op mul attrs={} lhs=t1 rhs=in1 -> out0
// CHECK-NEXT:   value t0 f32 [7,33]
// CHECK-NEXT:   value t1 f32 [7,33]
// CHECK-NEXT:   param in0 input f32 [7,33]
// CHECK-NEXT:   param in1 input f32 []
// CHECK-NEXT:   param out0 output f32 [7,33]
// CHECK:      kernel add_mul_sigmoid_sub_0 class=elementwise
// CHECK-NEXT:   op add attrs={} lhs=in0 rhs=in1 -> out0
// CHECK-NEXT:   op mul attrs={} lhs=out0 rhs=in2 -> t0
// CHECK-NEXT:   op sigmoid attrs={} input=t0 -> t1
// CHECK-NEXT:   op sub attrs={} lhs=t1 rhs=out0 -> out1
// CHECK-NEXT:   value t0 bf16 [64,4100]
// CHECK-NEXT:   value t1 bf16 [64,4100]
// CHECK-NEXT:   param in0 input bf16 [64,4100]
// CHECK-NEXT:   param in1 input bf16 [64,4100]
// CHECK-NEXT:   param in2 input bf16 [4100]
// CHECK-NEXT:   param out0 output bf16 [64,4100]
// CHECK-NEXT:   param out1 output bf16 [64,4100]
// CHECK:      function softcap
// CHECK:        launch div_tanh_mul_0
// CHECK:      function two_outputs
// CHECK:        launch add_mul_sigmoid_sub_0
// CHECK-NOT:    launch

// OFF:        kernel div_0
// OFF:        kernel tanh_0
// OFF:        kernel mul_0
// OFF:        kernel add_0
// OFF:        kernel mul_1
// OFF:        kernel sigmoid_0
// OFF:        kernel sub_0

func.func @softcap(%x: tensor<7x33xf32>, %cap: tensor<f32>) -> tensor<7x33xf32> {
  %z = kopt.div %x, %cap : tensor<7x33xf32>, tensor<f32> -> tensor<7x33xf32>
  %t = kopt.tanh %z : tensor<7x33xf32>
  %y = kopt.mul %t, %cap : tensor<7x33xf32>, tensor<f32> -> tensor<7x33xf32>
  return %y : tensor<7x33xf32>
}

func.func @two_outputs(%x: tensor<64x4100xbf16>, %res: tensor<64x4100xbf16>, %w: tensor<4100xbf16>) -> (tensor<64x4100xbf16>, tensor<64x4100xbf16>) {
  %s = kopt.add %x, %res : tensor<64x4100xbf16>, tensor<64x4100xbf16> -> tensor<64x4100xbf16>
  %m = kopt.mul %s, %w : tensor<64x4100xbf16>, tensor<4100xbf16> -> tensor<64x4100xbf16>
  %e = kopt.sigmoid %m : tensor<64x4100xbf16>
  %y = kopt.sub %e, %s : tensor<64x4100xbf16>, tensor<64x4100xbf16> -> tensor<64x4100xbf16>
  return %s, %y : tensor<64x4100xbf16>, tensor<64x4100xbf16>
}
