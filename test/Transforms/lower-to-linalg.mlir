// kopt-lower-to-linalg: the definition of the ops' semantics. One representative
// per family: the linalg.generic ops, their indexing maps, iterator types and
// scalar payloads (f16/bf16 extended to f32 in the payload and rounded once).
// RUN: kopt-opt %s --kopt-lower-to-linalg | FileCheck %s
// No kopt operator survives (kopt.kernel and kopt.yield stay), and the output
// verifies and re-parses.
// RUN: kopt-opt %s --kopt-lower-to-linalg | kopt-opt | FileCheck %s --check-prefix=NOKOPT
// NOKOPT-NOT: kopt.{{(matmul|add|sub|mul|div|max|min|exp|neg|abs|sqrt|rsqrt|tanh|log|log1p|sigmoid|relu|silu|gelu|cast|reduce|softmax|rmsnorm|layernorm) }}

// CHECK-DAG: #[[ID2:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[LAST2:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL0:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ROW2:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[SCALAR2:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[ID1:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[SCALAR1:map[0-9]*]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[ID0:map[0-9]*]] = affine_map<() -> ()>
// CHECK-DAG: #[[BA3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[BB3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[ID3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[MK:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KM:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[KN:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[NK:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>

//===----------------------------------------------------------------------===//
// Binary ops: NumPy broadcasting through the indexing maps
//===----------------------------------------------------------------------===//

// A missing leading dimension is not indexed; a size-1 dimension reads index 0.
// CHECK-LABEL: func.func @binary_broadcast(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xbf16>, %[[COL:[^:]*]]: tensor<4x1xbf16>, %[[ROW:[^:]*]]: tensor<8xbf16>
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4x8xbf16>
// CHECK-NEXT:    %[[ADD:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[LAST2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]], %[[ROW]] : tensor<4x8xbf16>, tensor<8xbf16>) outs(%[[E0]] : tensor<4x8xbf16>)
// CHECK-NEXT:    ^bb0(%[[L:.*]]: bf16, %[[R:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[LF:.*]] = arith.extf %[[L]] : bf16 to f32
// CHECK-NEXT:      %[[RF:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[LF]], %[[RF]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         linalg.generic {indexing_maps = [#[[COL0]], #[[LAST2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[COL]], %[[ROW]] : tensor<4x1xbf16>, tensor<8xbf16>)
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[SCALAR2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[A]], %[[B]] : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
// CHECK:         linalg.generic {indexing_maps = [#[[BA3]], #[[BB3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x1x8xf16>, tensor<3x1xf16>) outs(%{{.*}} : tensor<2x3x8xf16>)
// CHECK:           arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      arith.truncf %{{.*}} : f32 to f16
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]]]
// CHECK:           arith.subf
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]]]
// CHECK:           arith.mulf
func.func @binary_broadcast(%x: tensor<4x8xbf16>, %col: tensor<4x1xbf16>, %row: tensor<8xbf16>,
                            %f: tensor<4x8xf32>, %s: tensor<f32>, %u: tensor<2x1x8xf16>,
                            %v: tensor<3x1xf16>) {
  %0 = kopt.add %x, %row : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  %1 = kopt.max %col, %row : tensor<4x1xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  %2 = kopt.div %f, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = kopt.min %u, %v : tensor<2x1x8xf16>, tensor<3x1xf16> -> tensor<2x3x8xf16>
  %4 = kopt.sub %f, %f : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = kopt.mul %f, %f : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

// silu(x) = x * (1 / (1 + exp(-x))), in f32 for an f16 tensor.
// CHECK-LABEL: func.func @silu(
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<4x8xf16>) outs(%{{.*}} : tensor<4x8xf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f16, %{{.*}}: f16):
// CHECK-NEXT:      %[[X:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[NX:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[NX]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT:      %[[SIG:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[X]], %[[SIG]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[Y]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[T]] : f16
func.func @silu(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = kopt.silu %x : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// The other unary ops, one payload op each (sigmoid as in silu, relu against 0).
// CHECK-LABEL: func.func @unary(
// CHECK:         ^bb0(%[[A0:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R0:.*]] = math.exp %[[A0]] : f32
// CHECK-NEXT:      linalg.yield %[[R0]] : f32
// CHECK:         ^bb0(%[[A1:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R1:.*]] = arith.negf %[[A1]] : f32
// CHECK-NEXT:      linalg.yield %[[R1]] : f32
// CHECK:         ^bb0(%[[A2:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R2:.*]] = math.absf %[[A2]] : f32
// CHECK-NEXT:      linalg.yield %[[R2]] : f32
// CHECK:         ^bb0(%[[A3:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R3:.*]] = math.sqrt %[[A3]] : f32
// CHECK-NEXT:      linalg.yield %[[R3]] : f32
// CHECK:         ^bb0(%[[A4:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R4:.*]] = math.rsqrt %[[A4]] : f32
// CHECK-NEXT:      linalg.yield %[[R4]] : f32
// CHECK:         ^bb0(%[[A5:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R5:.*]] = math.tanh %[[A5]] : f32
// CHECK-NEXT:      linalg.yield %[[R5]] : f32
// CHECK:         ^bb0(%[[A6:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[N6:.*]] = arith.negf %[[A6]] : f32
// CHECK-NEXT:      %[[E6:.*]] = math.exp %[[N6]] : f32
// CHECK-NEXT:      %[[D6:.*]] = arith.addf %[[ONE]], %[[E6]] : f32
// CHECK-NEXT:      %[[R6:.*]] = arith.divf %[[ONE]], %[[D6]] : f32
// CHECK-NEXT:      linalg.yield %[[R6]] : f32
// CHECK:         ^bb0(%[[A7:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R7:.*]] = arith.maximumf %[[A7]], %[[Z]] : f32
// CHECK-NEXT:      linalg.yield %[[R7]] : f32
func.func @unary(%x: tensor<4x8xf32>) {
  %0 = kopt.exp %x : tensor<4x8xf32>
  %1 = kopt.neg %x : tensor<4x8xf32>
  %2 = kopt.abs %x : tensor<4x8xf32>
  %3 = kopt.sqrt %x : tensor<4x8xf32>
  %4 = kopt.rsqrt %x : tensor<4x8xf32>
  %5 = kopt.tanh %x : tensor<4x8xf32>
  %6 = kopt.sigmoid %x : tensor<4x8xf32>
  %7 = kopt.relu %x : tensor<4x8xf32>
  return
}

// log and log1p: one math.log / math.log1p each (libdevice's __nv_logf and
// __nv_log1pf on the GPU); f16 and bf16 extended to f32, computed in f32 and
// rounded once, as exp and tanh.
// CHECK-LABEL: func.func @log(
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT:    ^bb0(%[[A0:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R0:.*]] = math.log %[[A0]] : f32
// CHECK-NEXT:      linalg.yield %[[R0]] : f32
// CHECK:         ^bb0(%[[A1:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[R1:.*]] = math.log1p %[[A1]] : f32
// CHECK-NEXT:      linalg.yield %[[R1]] : f32
// CHECK:         ins(%{{.*}} : tensor<4x8xf16>) outs(%{{.*}} : tensor<4x8xf16>)
// CHECK-NEXT:    ^bb0(%[[H2:.*]]: f16, %{{.*}}: f16):
// CHECK-NEXT:      %[[X2:.*]] = arith.extf %[[H2]] : f16 to f32
// CHECK-NEXT:      %[[R2:.*]] = math.log %[[X2]] : f32
// CHECK-NEXT:      %[[T2:.*]] = arith.truncf %[[R2]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[T2]] : f16
// CHECK:         ins(%{{.*}} : tensor<2x3x4xbf16>) outs(%{{.*}} : tensor<2x3x4xbf16>)
// CHECK-NEXT:    ^bb0(%[[B3:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[X3:.*]] = arith.extf %[[B3]] : bf16 to f32
// CHECK-NEXT:      %[[R3:.*]] = math.log1p %[[X3]] : f32
// CHECK-NEXT:      %[[T3:.*]] = arith.truncf %[[R3]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T3]] : bf16
func.func @log(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %b: tensor<2x3x4xbf16>) {
  %0 = kopt.log %x : tensor<4x8xf32>
  %1 = kopt.log1p %x : tensor<4x8xf32>
  %2 = kopt.log %h : tensor<4x8xf16>
  %3 = kopt.log1p %b : tensor<2x3x4xbf16>
  return
}

// gelu, erf form: 0.5 x (1 + erf(x / sqrt 2)); tanh form:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// CHECK-LABEL: func.func @gelu(
// CHECK:         ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK-NEXT:      %[[ERF:.*]] = math.erf %[[S]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[CDF:.*]] = arith.addf %[[ONE]], %[[ERF]] : f32
// CHECK-NEXT:      %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[HX:.*]] = arith.mulf %[[HALF]], %[[X]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[HX]], %[[CDF]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
// CHECK:         ^bb0(%[[TX:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[X:.*]] = arith.extf %[[TX]] : bf16 to f32
// CHECK-NEXT:      %[[X2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[X3:.*]] = arith.mulf %[[X]], %[[X2]] : f32
// CHECK-NEXT:      %[[K:.*]] = arith.constant 4.471500e-02 : f32
// CHECK-NEXT:      %[[KX3:.*]] = arith.mulf %[[K]], %[[X3]] : f32
// CHECK-NEXT:      %[[IN:.*]] = arith.addf %[[X]], %[[KX3]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.constant 0.797884583 : f32
// CHECK-NEXT:      %[[ARG:.*]] = arith.mulf %[[R]], %[[IN]] : f32
// CHECK-NEXT:      %[[TH:.*]] = math.tanh %[[ARG]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[CDF:.*]] = arith.addf %[[ONE]], %[[TH]] : f32
// CHECK-NEXT:      %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[HX:.*]] = arith.mulf %[[HALF]], %[[X]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[HX]], %[[CDF]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
func.func @gelu(%x: tensor<4x8xf32>, %y: tensor<4x8xbf16>) {
  %0 = kopt.gelu %x : tensor<4x8xf32>
  %1 = kopt.gelu %y approximate(tanh) : tensor<4x8xbf16>
  return
}

// cast: widen to f32, then round once to the result type.
// CHECK-LABEL: func.func @cast(
// CHECK:         ^bb0(%[[A:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[A]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         ^bb0(%[[B:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT:      %[[E:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT:      linalg.yield %[[E]] : f32
// CHECK:         ^bb0(%[[C:.*]]: f16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[E2:.*]] = arith.extf %[[C]] : f16 to f32
// CHECK-NEXT:      %[[T2:.*]] = arith.truncf %[[E2]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T2]] : bf16
func.func @cast(%x: tensor<8x16xf32>, %y: tensor<8x16xbf16>, %z: tensor<8x16xf16>) {
  %0 = kopt.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  %1 = kopt.cast %y : tensor<8x16xbf16> to tensor<8x16xf32>
  %2 = kopt.cast %z : tensor<8x16xf16> to tensor<8x16xbf16>
  return
}

//===----------------------------------------------------------------------===//
// matmul: fill(0), contraction in f32 over (m, n, k), rounding generic
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_f32(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<16x64xf32>, %[[B:[^:]*]]: tensor<64x32xf32>
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<16x32xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[C:.*]] = linalg.generic {indexing_maps = [#[[MK]], #[[KN]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<16x64xf32>, tensor<64x32xf32>) outs(%[[ACC]] : tensor<16x32xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<16x32xf32>
// CHECK-NEXT:    return %[[C]]
func.func @matmul_f32(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %0 = kopt.matmul %a, %b : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_a(
// CHECK:         linalg.generic {indexing_maps = [#[[KM]], #[[KN]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<16x32xf32>)
func.func @matmul_transpose_a(%a: tensor<64x16xf32>, %b: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %0 = kopt.matmul %a, %b {transpose_a} : tensor<64x16xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_both(
// CHECK:         linalg.generic {indexing_maps = [#[[KM]], #[[NK]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<32x64xf32>) outs(%{{.*}} : tensor<16x32xf32>)
func.func @matmul_transpose_both(%a: tensor<64x16xf32>, %b: tensor<32x64xf32>) -> tensor<16x32xf32> {
  %0 = kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<64x16xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// bf16 operands: the products and the sum are f32 (accumulator tensor<..xf32>);
// a separate elementwise generic rounds the f32 result to bf16 once.
// CHECK-LABEL: func.func @matmul_bf16_transpose_b(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<16x4096xbf16>, %[[W:[^:]*]]: tensor<1024x4096xbf16>
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<16x1024xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<16x1024xf32>)
// CHECK-NEXT:    %[[C:.*]] = linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[W]] : tensor<16x4096xbf16>, tensor<1024x4096xbf16>) outs(%[[ACC]] : tensor<16x1024xf32>)
// CHECK-NEXT:    ^bb0(%[[IA:.*]]: bf16, %[[IB:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-DAG:       %[[FA:.*]] = arith.extf %[[IA]] : bf16 to f32
// CHECK-DAG:       %[[FB:.*]] = arith.extf %[[IB]] : bf16 to f32
// CHECK:           %[[P:.*]] = arith.mulf %[[FA]], %[[FB]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<16x1024xf32>
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<16x1024xbf16>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[C]] : tensor<16x1024xf32>) outs(%[[E2]] : tensor<16x1024xbf16>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK-NEXT:    } -> tensor<16x1024xbf16>
// CHECK-NEXT:    return %[[R]]
func.func @matmul_bf16_transpose_b(%x: tensor<16x4096xbf16>, %w: tensor<1024x4096xbf16>) -> tensor<16x1024xbf16> {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<16x4096xbf16>, tensor<1024x4096xbf16> -> tensor<16x1024xbf16>
  return %0 : tensor<16x1024xbf16>
}

// f16 operands with an f32 result: no rounding generic.
// CHECK-LABEL: func.func @matmul_f16_to_f32(
// CHECK:         linalg.fill
// CHECK-NEXT:    %[[C:.*]] = linalg.generic
// CHECK-SAME:      outs(%{{.*}} : tensor<16x32xf32>)
// CHECK:         } -> tensor<16x32xf32>
// CHECK-NEXT:    return %[[C]]
func.func @matmul_f16_to_f32(%a: tensor<16x64xf16>, %b: tensor<64x32xf16>) -> tensor<16x32xf32> {
  %0 = kopt.matmul %a, %b : tensor<16x64xf16>, tensor<64x32xf16> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

//===----------------------------------------------------------------------===//
// reduce: row reduction into an f32 accumulator
//===----------------------------------------------------------------------===//

// sum into f32: the reduction generic is the result.
// CHECK-LABEL: func.func @reduce_sum(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xbf16>
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]] : tensor<4x8xbf16>) outs(%[[ACC]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[F]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    return %[[S]]
func.func @reduce_sum(%x: tensor<4x8xbf16>) -> tensor<4xf32> {
  %0 = kopt.reduce sum %x : tensor<4x8xbf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// max starts from -inf, combines with maximumf (NaN-propagating), then rounds to f16.
// CHECK-LABEL: func.func @reduce_max_f16(
// CHECK:         %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[M:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<4x8xf16>) outs(%[[ACC]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f16, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK-NEXT:      %[[N:.*]] = arith.maximumf %[[F]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[M]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xf16>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: f16):
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[V]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[T]] : f16
// CHECK:         return %[[R]]
func.func @reduce_max_f16(%x: tensor<4x8xf16>) -> tensor<4xf16> {
  %0 = kopt.reduce max %x : tensor<4x8xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// mean of a rank-1 input: a sum into a rank-0 tensor, then a rank-0 generic that
// divides by the size of the reduced dimension.
// CHECK-LABEL: func.func @reduce_mean_rank1(
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<f32>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<f32>)
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[SCALAR1]]], iterator_types = ["reduction"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<4096xf32>) outs(%[[ACC]] : tensor<f32>)
// CHECK:           arith.addf
// CHECK:         %[[M:.*]] = linalg.generic {indexing_maps = [#[[ID0]], #[[ID0]]], iterator_types = []}
// CHECK-SAME:      ins(%[[S]] : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.constant 4.096000e+03 : f32
// CHECK-NEXT:      %[[D:.*]] = arith.divf %[[V]], %[[N]] : f32
// CHECK-NEXT:      linalg.yield %[[D]] : f32
// CHECK:         return %[[M]]
func.func @reduce_mean_rank1(%x: tensor<4096xf32>) -> tensor<f32> {
  %0 = kopt.reduce mean %x : tensor<4096xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// softmax: max, sum of exp(x - max), 1 / sum, exp(x - max) * (1 / sum)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xbf16>
// CHECK:         %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:    %[[MACC:.*]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]] : tensor<4x8xbf16>) outs(%[[MACC]] : tensor<4xf32>)
// CHECK:           arith.maximumf
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[SACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[MAX]] : tensor<4x8xbf16>, tensor<4xf32>) outs(%[[SACC]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[F]], %[[M]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[E]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// 1 / sum, once per row.
// CHECK:         %[[INV:.*]] = linalg.generic {indexing_maps = [#[[ROW1:.*]], #[[ROW1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[SUM]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]], %[[MAX]], %[[INV]] : tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[RS:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[F]], %[[M]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.mulf %[[E]], %[[RS]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[Q]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         return %[[Y]]
func.func @softmax(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = kopt.softmax %x : tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

//===----------------------------------------------------------------------===//
// rmsnorm: x * rsqrt(sum(x^2) / n + eps) [* weight]
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rmsnorm_weight(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xbf16>, %[[W:[^:]*]]: tensor<8xbf16>
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[SS:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]] : tensor<4x8xbf16>) outs(%[[ACC]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[F]], %[[F]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[SQ]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK:         %[[RSTD:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[SS]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[CN:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:      %[[MS:.*]] = arith.divf %[[V]], %[[CN]] : f32
// CHECK-NEXT:      %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT:      %[[MSE:.*]] = arith.addf %[[MS]], %[[EPS]] : f32
// CHECK-NEXT:      %[[RS:.*]] = math.rsqrt %[[MSE]] : f32
// CHECK-NEXT:      linalg.yield %[[RS]] : f32
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[LAST2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]], %[[RSTD]], %[[W]] : tensor<4x8xbf16>, tensor<4xf32>, tensor<8xbf16>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[R:.*]]: f32, %[[WI:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[WF:.*]] = arith.extf %[[WI]] : bf16 to f32
// CHECK-NEXT:      %[[XN:.*]] = arith.mulf %[[F]], %[[R]] : f32
// CHECK-NEXT:      %[[XW:.*]] = arith.mulf %[[XN]], %[[WF]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[XW]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         return %[[Y]]
func.func @rmsnorm_weight(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = kopt.rmsnorm %x weight(%w : tensor<8xbf16>) eps = 1.0e-05 : tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// Without weight, on a rank-3 input (rows are the two leading dimensions).
// CHECK-LABEL: func.func @rmsnorm_rank3(
// CHECK:         linalg.generic {indexing_maps = [#[[ID3]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<2x3x8xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      outs(%{{.*}} : tensor<2x3xf32>)
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:           math.rsqrt
// CHECK:         linalg.generic {indexing_maps = [#[[ID3]], #[[MN]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[IN]], %[[R]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @rmsnorm_rank3(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = kopt.rmsnorm %x eps = 0.0 : tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

//===----------------------------------------------------------------------===//
// layernorm: mean, biased variance of x - mean, (x - mean) * rstd [* w] [+ b]
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layernorm_weight_bias(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<4x8xbf16>, %[[W:[^:]*]]: tensor<8xbf16>, %[[B:[^:]*]]: tensor<8xbf16>
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]] : tensor<4x8xbf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[F]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK:         %[[MEAN:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[SUM]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[CN:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:      %[[D:.*]] = arith.divf %[[V]], %[[CN]] : f32
// CHECK-NEXT:      linalg.yield %[[D]] : f32
// CHECK:         %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[MEAN]] : tensor<4x8xbf16>, tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[C:.*]] = arith.subf %[[F]], %[[M]] : f32
// CHECK-NEXT:      %[[C2:.*]] = arith.mulf %[[C]], %[[C]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[C2]], %[[O]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK:         %[[RSTD:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[SQ]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[CN:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:      %[[VAR:.*]] = arith.divf %[[V]], %[[CN]] : f32
// CHECK-NEXT:      %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK-NEXT:      %[[RS:.*]] = math.rsqrt %[[VE]] : f32
// CHECK-NEXT:      linalg.yield %[[RS]] : f32
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]], #[[LAST2]], #[[LAST2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]], %[[MEAN]], %[[RSTD]], %[[W]], %[[B]] : tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<8xbf16>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[R:.*]]: f32, %[[WI:.*]]: bf16, %[[BI:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT:      %[[WF:.*]] = arith.extf %[[WI]] : bf16 to f32
// CHECK-NEXT:      %[[BF:.*]] = arith.extf %[[BI]] : bf16 to f32
// CHECK-NEXT:      %[[C:.*]] = arith.subf %[[F]], %[[M]] : f32
// CHECK-NEXT:      %[[XN:.*]] = arith.mulf %[[C]], %[[R]] : f32
// CHECK-NEXT:      %[[XW:.*]] = arith.mulf %[[XN]], %[[WF]] : f32
// CHECK-NEXT:      %[[XB:.*]] = arith.addf %[[XW]], %[[BF]] : f32
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[XB]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         return %[[Y]]
func.func @layernorm_weight_bias(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = kopt.layernorm %x weight(%w : tensor<8xbf16>) bias(%b : tensor<8xbf16>) eps = 1.0e-05 : tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// Only a bias: the final generic reads x, mean, rstd and the bias, and adds it.
// CHECK-LABEL: func.func @layernorm_bias_only(
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]], #[[LAST2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %[[M:.*]]: f32, %[[R:.*]]: f32, %[[BI:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.subf %[[IN]], %[[M]] : f32
// CHECK-NEXT:      %[[XN:.*]] = arith.mulf %[[C]], %[[R]] : f32
// CHECK-NEXT:      %[[XB:.*]] = arith.addf %[[XN]], %[[BI]] : f32
// CHECK-NEXT:      linalg.yield %[[XB]] : f32
func.func @layernorm_bias_only(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kopt.layernorm %x bias(%b : tensor<8xf32>) eps = 1.0e-12 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Neither weight nor bias.
// CHECK-LABEL: func.func @layernorm_plain(
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %[[M:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.subf %[[IN]], %[[M]] : f32
// CHECK-NEXT:      %[[XN:.*]] = arith.mulf %[[C]], %[[R]] : f32
// CHECK-NEXT:      linalg.yield %[[XN]] : f32
func.func @layernorm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kopt.layernorm %x eps = 1.0e-05 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

//===----------------------------------------------------------------------===//
// Inside kernels: the kernel stays, its body is lowered.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @in_kernel(
// CHECK:         kopt.kernel "exp_0" ins(%{{.*}} : tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:      %[[G:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[A]] : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>)
// CHECK:           math.exp
// CHECK:           kopt.yield %[[G]] : tensor<4xf32>
func.func @in_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kopt.kernel "exp_0" ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = kopt.exp %a : tensor<4xf32>
    kopt.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
