// kopt.softmax needs a dimension to normalize over: rank 0 is rejected by the
// verifier (it used to crash kopt-lower-to-linalg).
// RUN: kopt-opt %s -split-input-file -verify-diagnostics

func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'kopt.softmax' op expects an input of rank 1 or more}}
  %y = kopt.softmax %x : tensor<f32>
  return %y : tensor<f32>
}
