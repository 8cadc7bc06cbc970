// Diagnostics of kopt-lower-to-gpu and of the kernel builders it calls.
// Function-level checks run on what kopt-fuse leaves; kernel-level checks use
// hand-written kopt.kernel ops whose bodies no kernel builder handles.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics --kopt-lower-to-gpu --kopt-tile

//===----------------------------------------------------------------------===//
// Host functions
//===----------------------------------------------------------------------===//

func.func @returns_argument(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.return' op returns a function argument; kopt needs every result to be computed by a kernel}}
  return %x : tensor<4xf32>
}

// -----

func.func @returns_argument_and_kernel(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kopt.kernel "exp_0" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  // expected-error @+1 {{'func.return' op returns a function argument; kopt needs every result to be computed by a kernel}}
  return %0, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @returns_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kopt.kernel "exp_0" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  // expected-error @+1 {{'func.return' op returns the same value twice; each result needs its own kernel (kopt-fuse copies repeated results)}}
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @non_kopt_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.constant' op is not supported by kopt: a compiled function may hold kopt ops only}}
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %0 = kopt.kernel "add_0" ins(%x, %c : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = kopt.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    kopt.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A kopt op outside any kernel: kopt-fuse has not run.
func.func @not_fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.exp' op must be grouped into a kopt.kernel first (run kopt-fuse before kopt-lower-to-gpu)}}
  %0 = kopt.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op kopt compiles functions over static tensors only, got 'tensor<?x4096xbf16>'}}
func.func @dynamic_shape(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  return %x : tensor<?x4096xbf16>
}

// -----

// expected-error @+1 {{'func.func' op kopt compiles functions over static tensors only, got 'tensor<*xf32>'}}
func.func @unranked_result(%x: tensor<4xf32>) -> tensor<*xf32> {
  %u = tensor.cast %x : tensor<4xf32> to tensor<*xf32>
  return %u : tensor<*xf32>
}

// -----

// expected-error @+1 {{'func.func' op kopt compiles functions over static tensors only, got 'f32'}}
func.func @scalar_argument(%s: f32, %x: tensor<4xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op kopt compiles functions over static tensors only, got 'memref<4xf32>'}}
func.func @memref_argument(%m: memref<4xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op must have a single block to be compiled by kopt}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Kernel classification
//===----------------------------------------------------------------------===//

func.func @kopt_op_in_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "exp_0" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{'kopt.exp' op is not supported inside a kernel (run kopt-lower-to-linalg first)}}
    %e = kopt.exp %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @no_generic(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op has no linalg.generic to build a kernel from}}
  %0 = kopt.kernel "fill" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = arith.constant 0.0 : f32
    %f = linalg.fill ins(%c : f32) outs(%a : tensor<4xf32>) -> tensor<4xf32>
    kopt.yield %f : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
// A chain's internal value lives in registers, lane by lane: a later generic
// reads it only as it was computed.
func.func @elementwise_chain_transposed(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kopt.kernel "chain" ins(%x : tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %e = tensor.empty() : tensor<4x4xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.exp %in : f32
      linalg.yield %r : f32
    } -> tensor<4x4xf32>
    // expected-error @+1 {{'linalg.generic' op input #0 reads an earlier generic's result through a map other than the identity}}
    %h = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.negf %in : f32
      linalg.yield %r : f32
    } -> tensor<4x4xf32>
    kopt.yield %h : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise kernels
//===----------------------------------------------------------------------===//

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>
func.func @elementwise_transposed_output(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kopt.kernel "transpose" ins(%x : tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %e = tensor.empty() : tensor<4x4xf32>
    // expected-error @+1 {{'linalg.generic' op elementwise kernels need an identity output map}}
    %g = linalg.generic {indexing_maps = [#id2, #tr2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4xf32>
    kopt.yield %g : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @elementwise_reads_output(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "accumulate" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    // expected-error @+1 {{'linalg.generic' op elementwise payloads must not read their output}}
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @elementwise_result_not_yielded(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "dead" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    // expected-error @+1 {{'linalg.generic' op result must be a result of the kernel}}
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4xf32>
    kopt.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @elementwise_input_not_argument(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "constant" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    // expected-error @+1 {{'linalg.generic' op input #0 must be an argument of the kernel}}
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%e : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#diag = affine_map<(d0, d1) -> (d0 + d1)>
func.func @elementwise_unsupported_map(%x: tensor<4x4xf32>, %v: tensor<8xf32>) -> tensor<4x4xf32> {
  %0 = kopt.kernel "skew" ins(%x, %v : tensor<4x4xf32>, tensor<8xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<8xf32>):
    %e = tensor.empty() : tensor<4x4xf32>
    // expected-error @+1 {{'linalg.generic' op unsupported indexing map for input #1}}
    %g = linalg.generic {indexing_maps = [#id2, #diag, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x4xf32>, tensor<8xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%in: f32, %in2: f32, %out: f32):
      %r = arith.addf %in, %in2 : f32
      linalg.yield %r : f32
    } -> tensor<4x4xf32>
    kopt.yield %g : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Row kernels
//===----------------------------------------------------------------------===//

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_bad_combiner(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "sub_reduce" ins(%x : tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %c = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'linalg.generic' op reduction payload must end in acc = comb(value, acc) with comb one of addf, mulf, maximumf, minimumf, maxnumf, minnumf}}
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.subf %out, %in : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_accumulator_not_filled(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "sum_into" ins(%x, %init : tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>, %i: tensor<4xf32>):
    // expected-error @+1 {{'linalg.generic' op reduction accumulator must be initialised by a linalg.fill of a constant}}
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%i : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @row_then_column_reduction(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = kopt.kernel "two_reductions" ins(%x : tensor<4x8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %c = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    %e2 = tensor.empty() : tensor<8xf32>
    %f2 = linalg.fill ins(%c : f32) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
    // expected-error @+1 {{'linalg.generic' op does not fit a row kernel: expected a reduction over the last dimension, a map over the rows, or a map over the full 2-D domain}}
    %h = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%f2 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    kopt.yield %h : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @row_map_reads_output(%x: tensor<4x8xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "row_acc" ins(%x, %y : tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4xf32>):
    %c = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    // expected-error @+1 {{'linalg.generic' op row-scalar payloads must not read their output}}
    %h = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%g : tensor<4xf32>) outs(%b : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    kopt.yield %h : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#last = affine_map<(d0, d1) -> (d1)>
// Row sums of a square matrix read back by column (valid linalg; not a row kernel).
func.func @row_value_read_by_column(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kopt.kernel "bad_read" ins(%x : tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%a: tensor<8x8xf32>):
    %c = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8xf32>
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x8xf32>) outs(%f : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    %e2 = tensor.empty() : tensor<8x8xf32>
    // expected-error @+1 {{'linalg.generic' op reads a row value with an unsupported indexing map}}
    %h = linalg.generic {indexing_maps = [#id2, #last, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %g : tensor<8x8xf32>, tensor<8xf32>) outs(%e2 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %s: f32, %out: f32):
      %r = arith.subf %in, %s : f32
      linalg.yield %r : f32
    } -> tensor<8x8xf32>
    kopt.yield %h : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_full_map_unused(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "dead_full_map" ins(%x : tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %c = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    %e2 = tensor.empty() : tensor<4x8xf32>
    // expected-error @+1 {{'linalg.generic' op result must be a result of the kernel or an input of a later generic of it}}
    %h = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %g : tensor<4x8xf32>, tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
    ^bb0(%in: f32, %s: f32, %out: f32):
      %r = arith.subf %in, %s : f32
      linalg.yield %r : f32
    } -> tensor<4x8xf32>
    kopt.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Matmul kernels
//===----------------------------------------------------------------------===//

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_accumulator_not_zero(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kopt.kernel "mm_one" ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>):
    %one = arith.constant 1.0 : f32
    %e = tensor.empty() : tensor<8x8xf32>
    %f = linalg.fill ins(%one : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    // expected-error @+1 {{'linalg.generic' op contraction accumulator must start from a fill of 0}}
    %g = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    kopt.yield %g : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}

// -----

// A fused epilogue (kopt-fuse's matmul kernels) reads what it computed before
// only through the identity map: here the contraction's result transposed.
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t2 = affine_map<(d0, d1) -> (d1, d0)>
func.func @matmul_epilogue_transposed(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kopt.kernel "mm_bias" ins(%a, %b, %c : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>, %z: tensor<8x8xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %g = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    // expected-error @+1 {{'linalg.generic' op epilogue input #0 must be a kernel argument read through a map of loop dimensions and constants, or a value computed before it read through the identity map}}
    %h = linalg.generic {indexing_maps = [#t2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g, %z : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    kopt.yield %h : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_prologue(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kopt.kernel "neg_mm" ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>):
    %e = tensor.empty() : tensor<8x8xf32>
    // expected-error @+1 {{'linalg.generic' op the first generic of a matmul kernel must be the contraction}}
    %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%p: f32, %out: f32):
      %r = arith.negf %p : f32
      linalg.yield %r : f32
    } -> tensor<8x8xf32>
    %zero = arith.constant 0.0 : f32
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %g = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%n, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    kopt.yield %g : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}

// -----

// Sizes beyond any GPU's memory (and beyond 64-bit index arithmetic).
func.func @huge(%x: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {
  // expected-error @+1 {{'kopt.exp' op has a tensor of more than 2^48 bytes ('tensor<4294967296x4294967296xf32>'), more than any GPU's memory}}
  %y = kopt.exp %x : tensor<4294967296x4294967296xf32>
  return %y : tensor<4294967296x4294967296xf32>
}

// -----

// Pack kernels pad with zeros only: a kernel written by hand with another
// padding value is refused (kopt.pack never makes one).
func.func @pad_with_one(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %0 = kopt.kernel "pack_0" ins(%x : tensor<4x4xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{'tensor.pad' op pack kernels pad with zeros only}}
    %p = tensor.pad %a low[0, 0] high[0, 4] {
    ^bb0(%i: index, %j: index):
      tensor.yield %one : f32
    } : tensor<4x4xf32> to tensor<4x8xf32>
    kopt.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @pad_low(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %0 = kopt.kernel "pack_0" ins(%x : tensor<4x4xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %zero = arith.constant 0.0 : f32
    // expected-error @+1 {{'tensor.pad' op pack kernels pad at the high end only, by static amounts}}
    %p = tensor.pad %a low[0, 2] high[0, 2] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
    } : tensor<4x4xf32> to tensor<4x8xf32>
    kopt.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A function that already launches kernels (kopt.launch, made by this pass)
// is not compiled again (kopt-fuse leaves kopt.launch alone: fuse.mlir).
func.func @already_lowered(%x: memref<4xf32>, %y: memref<4xf32>) {
// expected-error @-1 {{'func.func' op kopt compiles functions over static tensors only, got 'memref<4xf32>'}}
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x, %y : memref<4xf32>, memref<4xf32>) {kernel_class = "elementwise", num_inputs = 1, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
    gpu.return
  }
}

