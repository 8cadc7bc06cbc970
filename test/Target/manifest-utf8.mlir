// Names that are not valid UTF-8 cannot be written in the launch manifest (JSON
// strings are UTF-8): kopt-opt reports where they come from and writes nothing,
// instead of aborting inside the JSON serialization (issue 15). The bytes come
// from MLIR's string escapes (\FF is the byte 0xff). The output path is
// manifest-utf8-output.mlir's.
// RUN: rm -f %t.ptx %t.json
// RUN: not kopt-opt %s --split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null 2>&1 | FileCheck %s
// RUN: not ls %t.ptx %t.json

// A function name.
// CHECK: manifest-utf8.mlir:[[@LINE+1]]:1: error: the function's name is not valid UTF-8, and the launch manifest (JSON) names it; rename the function
func.func @"bad\FFname"(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = kopt.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// A parameter name in a kernel's recorded source: kopt.kernel's verifier
// rejects a source that is not its body's (the bytes printed escaped).
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-utf8.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'kopt.kernel' op source {attrs = {}, name = "exp", params = ["in\FFput", "result"]} disagrees with the body's 'kopt.exp'
  %0 = kopt.kernel "exp_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {attrs = {}, name = "exp", params = ["in\FFput", "result"]}} {
  ^bb0(%a: tensor<8xf32>):
    %e = kopt.exp %a : tensor<8xf32>
    kopt.yield %e : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

// An attribute value in the recorded source: the same.
func.func @g(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-utf8.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'kopt.kernel' op source {attrs = {approximate = "no\FFne"}, name = "gelu", params = ["input", "result"]} disagrees with the body's 'kopt.gelu'
  %0 = kopt.kernel "gelu_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {attrs = {approximate = "no\FFne"}, name = "gelu", params = ["input", "result"]}} {
  ^bb0(%a: tensor<8xf32>):
    %e = kopt.gelu %a : tensor<8xf32>
    kopt.yield %e : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
