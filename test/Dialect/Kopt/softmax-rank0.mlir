// XFAIL: *
// Compiler bug: kopt.softmax has no verifier, so a rank-0 input is accepted, and
// kopt-lower-to-linalg then crashes on it ("LLVM ERROR: SmallVector unable to grow.
// Requested capacity (18446744073709551615)": Lowering::rows takes shape.end() - 1 of
// an empty shape). reduce, rmsnorm and layernorm reject rank 0 with "expects an input
// of rank 1 or more"; softmax should too. When fixed, delete the XFAIL line.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics
// RUN: kopt-opt %s -split-input-file --kopt-lower-to-linalg -verify-diagnostics

func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'kopt.softmax' op expects an input of rank 1 or more}}
  %y = kopt.softmax %x : tensor<f32>
  return %y : tensor<f32>
}
