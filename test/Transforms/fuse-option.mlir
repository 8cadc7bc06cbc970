// --kopt-to-ptx passes `fuse` on to kopt-fuse: on by default (one kernel for
// the chain), `fuse=false` gives one kernel per op.
// RUN: kopt-opt %s --kopt-to-ptx --mlir-print-ir-after=kopt-fuse -o /dev/null 2>&1 | FileCheck %s --check-prefix=ON
// RUN: kopt-opt %s --kopt-to-ptx="fuse=false" --mlir-print-ir-after=kopt-fuse -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF

// ON-LABEL:  IR Dump After KoptFuse
// ON:          kopt.kernel "div_tanh_mul_0"
// ON-NOT:      kopt.kernel "
// OFF-LABEL: IR Dump After KoptFuse
// OFF:         kopt.kernel "div_0"
// OFF:         kopt.kernel "tanh_0"
// OFF:         kopt.kernel "mul_0"
// OFF-NOT:     kopt.kernel "
func.func @softcap(%logits: tensor<16x256xf32>, %cap: tensor<f32>) -> tensor<16x256xf32> {
  %z = kopt.div %logits, %cap : tensor<16x256xf32>, tensor<f32> -> tensor<16x256xf32>
  %t = kopt.tanh %z : tensor<16x256xf32>
  %y = kopt.mul %t, %cap : tensor<16x256xf32>, tensor<f32> -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}
