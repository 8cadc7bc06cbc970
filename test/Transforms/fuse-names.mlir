// kopt-fuse never reuses the name of a kernel already in the module.
// RUN: kopt-opt %s --kopt-fuse | FileCheck %s

// CHECK-LABEL: func.func @f(
// CHECK:         kopt.kernel "exp_0"
// CHECK:         kopt.kernel "exp_1"
// CHECK:         kopt.kernel "exp_2"
// CHECK-NOT:     kopt.kernel "exp_0"
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = kopt.kernel "exp_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %e = kopt.exp %a : tensor<8xf32>
    kopt.yield %e : tensor<8xf32>
  }
  %1 = kopt.exp %x : tensor<8xf32>
  %2 = kopt.exp %x : tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
