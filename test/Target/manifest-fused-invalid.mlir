// The launch manifest of a fused kernel comes from its launch's `source`
// (`ops`, `values`): one that the manifest library cannot take is an error at
// the kernel, never a manifest kopt-run refuses. kopt.kernel's verifier holds
// a body of kopt ops to kopt::fusedKernelSource (test/Dialect/Kopt/
// invalid.mlir); these hand-written kernels hold linalg already.
// RUN: rm -f %t.ptx %t.json
// RUN: not kopt-opt %s --split-input-file --kopt-to-ptx="output=%t.ptx" -o /dev/null 2>&1 | FileCheck %s
// RUN: not ls %t.ptx %t.json

#id = affine_map<(d0) -> (d0)>
// An op the manifest does not know.
func.func @unknown_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-fused-invalid.mlir:[[@LINE+1]]:{{[0-9]+}}: error: kernel 'k_0' computes an op the launch manifest does not know: 'frob'
  %0 = kopt.kernel "k_0" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {ops = [{attrs = {}, name = "frob", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "neg", operands = ["t0"], results = ["out0"]}], params = ["in0", "out0"], values = [{name = "t0", type = tensor<8xf32>}]}} {
  ^bb0(%a: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.negf %in : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    kopt.yield %h : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
// An internal value that `values` does not list.
func.func @missing_value(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-fused-invalid.mlir:[[@LINE+1]]:{{[0-9]+}}: error: invalid launch manifest: kernels[0] (k_1).ops[0].result: no parameter or value named 't0'
  %0 = kopt.kernel "k_1" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {ops = [{attrs = {}, name = "exp", operands = ["in0"], results = ["t0"]}, {attrs = {}, name = "neg", operands = ["t0"], results = ["out0"]}], params = ["in0", "out0"], values = []}} {
  ^bb0(%a: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.negf %in : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    kopt.yield %h : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
// An op entry of two results.
func.func @two_results(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: manifest-fused-invalid.mlir:[[@LINE+1]]:{{[0-9]+}}: error: kernel 'k_2' has a malformed `source`: ops[0] needs a name, operands and one result
  %0 = kopt.kernel "k_2" ins(%x : tensor<8xf32>) -> tensor<8xf32> attributes {source = {ops = [{attrs = {}, name = "exp", operands = ["in0"], results = ["out0", "t0"]}], params = ["in0", "out0"], values = []}} {
  ^bb0(%a: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    kopt.yield %g : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
