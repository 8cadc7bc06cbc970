// kopt-fuse's max-params: a merge that would give a fused kernel more buffers
// (inputs and outputs) than the limit is not made (PTX ISA 8.0 allows 4352
// bytes of kernel parameters; the default, 256 buffers, stays well below).
// Chains longer than four ops are named after their first four and `_more`.
// RUN: kopt-opt %s --kopt-fuse="max-params=4" | FileCheck %s --check-prefix=FOUR
// RUN: kopt-opt %s --kopt-fuse | FileCheck %s --check-prefix=DEFAULT

// x0 + x1 + x2 fills four buffers (three inputs, one output); adding x3 would
// need five, so the chain splits there.
// FOUR-LABEL: func.func @chain(
// FOUR:         kopt.kernel "add_add_0" ins(%{{.*}}, %{{.*}}, %{{.*}} :
// FOUR:         kopt.kernel "add_add_1" ins(%{{.*}}, %{{.*}}, %{{.*}} :
// FOUR-NOT:     kopt.kernel
// DEFAULT-LABEL: func.func @chain(
// DEFAULT:       kopt.kernel "add_add_add_add_0" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// DEFAULT-NOT:   kopt.kernel
func.func @chain(%x0: tensor<8xf32>, %x1: tensor<8xf32>, %x2: tensor<8xf32>, %x3: tensor<8xf32>, %x4: tensor<8xf32>) -> tensor<8xf32> {
  %a = kopt.add %x0, %x1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %b = kopt.add %a, %x2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %c = kopt.add %b, %x3 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %d = kopt.add %c, %x4 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// FOUR-LABEL: func.func @long(
// DEFAULT-LABEL: func.func @long(
// DEFAULT:       kopt.kernel "exp_neg_tanh_abs_more_0"
// DEFAULT-NOT:   kopt.kernel
func.func @long(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = kopt.exp %x : tensor<8xf32>
  %b = kopt.neg %a : tensor<8xf32>
  %c = kopt.tanh %b : tensor<8xf32>
  %d = kopt.abs %c : tensor<8xf32>
  %e = kopt.relu %d : tensor<8xf32>
  return %e : tensor<8xf32>
}
