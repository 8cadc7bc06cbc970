// The compiler runs the manifest library's validator before writing the
// launch manifest, so it never writes one kopt-run refuses: a kernel that
// breaks a rule is an error at its launch (the kernel), naming the field as
// kopt-run would. A hand-written kernel whose recorded source says what the
// runtime cannot accept is stopped earlier still, by kopt.kernel's verifier,
// while its body holds its kopt op (the source must be what kopt-fuse records
// for the body); the validator's rules themselves are tested in
// test/unit/ManifestTest.cpp, and kopt ops are held to them by their
// verifiers (eps in [0, 1], test/Dialect/Kopt/invalid.mlir).
// RUN: rm -f %t.ptx %t.json
// RUN: not kopt-opt %s --split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null 2>&1 | FileCheck %s
// RUN: not ls %t.ptx %t.json

// An eps above 1 (kopt::manifest::epsError, the rule of the dialect's verifier).
func.func @eps(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // CHECK: manifest-validate.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'kopt.kernel' op source {attrs = {eps = 2.000000e+00 : f32}, name = "rmsnorm", params = ["input", "result"]} disagrees with the body's 'kopt.rmsnorm'
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
  // CHECK: manifest-validate.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'kopt.kernel' op source {attrs = {}, name = "exp", params = ["x", "result"]} disagrees with the body's 'kopt.exp'
  %0 = kopt.kernel "exp_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {attrs = {}, name = "exp", params = ["x", "result"]}} {
  ^bb0(%a: tensor<8xf32>):
    %e = kopt.exp %a : tensor<8xf32>
    kopt.yield %e : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
