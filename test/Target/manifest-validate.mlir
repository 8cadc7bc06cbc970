// The compiler runs the manifest library's validator before writing the
// launch manifest, so it never writes one kopt-run refuses: a kernel that
// breaks a rule is an error at its launch (the kernel), naming the field as
// kopt-run would. Hand-written kernels whose recorded source says what the
// runtime cannot accept are the way to get there (kopt ops themselves are
// held to the same rules by their verifiers: eps in [0, 1], see
// test/Dialect/Kopt/invalid.mlir).
// RUN: rm -f %t.ptx %t.json
// RUN: not kopt-opt %s --split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null 2>&1 | FileCheck %s
// RUN: not ls %t.ptx %t.json

// An eps above 1 (kopt::manifest::epsError, the rule of the dialect's verifier).
func.func @eps(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // CHECK: manifest-validate.mlir:[[@LINE+1]]:{{[0-9]+}}: error: invalid launch manifest: kernels[0] (rmsnorm_0).ops[0].attrs.eps: eps must be in [0, 1], got 2
  %0 = kopt.kernel "rmsnorm_0" ins(%x : tensor<4x64xf32>) -> tensor<4x64xf32> attributes {source = {attrs = {eps = 2.0 : f32}, name = "rmsnorm", params = ["input", "result"]}} {
  ^bb0(%a: tensor<4x64xf32>):
    %e = kopt.rmsnorm %a eps = 1.0e-05 : tensor<4x64xf32>
    kopt.yield %e : tensor<4x64xf32>
  }
  return %0 : tensor<4x64xf32>
}

// -----

// A parameter that is not an operand of the recorded op.
func.func @operand(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-validate.mlir:[[@LINE+1]]:{{[0-9]+}}: error: invalid launch manifest: kernels[0] (exp_0).ops[0].operands.x: op exp has no operand 'x' (its operands are input)
  %0 = kopt.kernel "exp_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {attrs = {}, name = "exp", params = ["x", "result"]}} {
  ^bb0(%a: tensor<8xf32>):
    %e = kopt.exp %a : tensor<8xf32>
    kopt.yield %e : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
