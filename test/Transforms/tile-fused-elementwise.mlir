// Fused elementwise kernels (kopt-fuse) through kopt-lower-to-linalg,
// kopt-lower-to-gpu and kopt-tile: the launch carries the kernel's inputs,
// outputs and `source`; the gpu.func runs each op's payload in order on the V
// lanes of a group, loading each input once and storing every output.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// The output verifies and re-parses.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | kopt-opt -split-input-file -o /dev/null

// Two outputs: the sum (also read by exp) and the bf16 cast of its exp. The
// bf16 output makes V = 8; the bias row is read contiguously (a vector too).
// CHECK-LABEL: func.func @two_outputs(
// CHECK-SAME:    %[[X:[^:]*]]: memref<4x8xf32>, %[[B:[^:]*]]: memref<8xf32>, %[[O0:[^:]*]]: memref<4x8xf32>, %[[O1:[^:]*]]: memref<4x8xbf16>)
// CHECK:         kopt.launch @kopt_kernels::@add_exp_cast_0 {{.*}} args(%[[X]], %[[B]], %[[O0]], %[[O1]] : memref<4x8xf32>, memref<8xf32>, memref<4x8xf32>, memref<4x8xbf16>)
// CHECK-SAME:      kernel_class = "elementwise", num_inputs = 2 : i64, num_outputs = 2 : i64, source = {ops = [{attrs = {}, name = "add", operands = ["in0", "in1"], results = ["out0"]}, {attrs = {}, name = "exp", operands = ["out0"], results = ["t0"]}, {attrs = {}, name = "cast", operands = ["t0"], results = ["out1"]}], params = ["in0", "in1", "out0", "out1"], values = [{name = "t0", type = tensor<4x8xf32>}]}
// CHECK-NOT:     kopt.launch
// CHECK:       gpu.func @add_exp_cast_0(%[[A0:[^:]*]]: memref<4x8xf32>, %[[A1:[^:]*]]: memref<8xf32>, %[[A2:[^:]*]]: memref<4x8xf32>, %[[A3:[^:]*]]: memref<4x8xbf16>)
// CHECK:         scf.for
// CHECK:           %[[VX:.*]] = vector.load %[[A0]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x8xf32>, vector<8xf32>
// CHECK:           %[[VB:.*]] = vector.load %[[A1]][%{{.*}}] {alignment = 16 : i64} : memref<8xf32>, vector<8xf32>
// CHECK-NOT:       vector.load
// CHECK-COUNT-8:   arith.addf
// CHECK-COUNT-8:   math.exp
// CHECK-COUNT-8:   arith.truncf {{.*}} : f32 to bf16
// CHECK:           %[[S:.*]] = vector.from_elements {{.*}} : vector<8xf32>
// CHECK-NEXT:      vector.store %[[S]], %[[A2]][{{.*}}] {alignment = 16 : i64} : memref<4x8xf32>, vector<8xf32>
// CHECK-NEXT:      %[[C:.*]] = vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-NEXT:      vector.store %[[C]], %[[A3]][{{.*}}] {alignment = 16 : i64} : memref<4x8xbf16>, vector<8xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
func.func @two_outputs(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %s = kopt.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %e = kopt.exp %s : tensor<4x8xf32>
  %c = kopt.cast %e : tensor<4x8xf32> to tensor<4x8xbf16>
  return %s, %c : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// An odd width (5) and a bias broadcast along the middle dimension: scalar
// accesses. Each op rounds its result to f16 as its own kernel would; the
// internal sum is read twice by the mul, from registers.
// CHECK-LABEL: gpu.func @add_mul_cast_0(
// CHECK-SAME:    %[[X:[^:]*]]: memref<3x4x5xf16>, %[[B:[^:]*]]: memref<4x1xf16>, %[[R:[^:]*]]: memref<3x4x5xf32>)
// CHECK:         scf.for %{{.*}} = %{{.*}} to %c60 step
// CHECK:           %[[XV:.*]] = memref.load %[[X]][%[[I:.*]], %[[J:.*]], %[[K:.*]]] : memref<3x4x5xf16>
// CHECK:           %[[BV:.*]] = memref.load %[[B]][%[[J]], %{{.*}}] : memref<4x1xf16>
// CHECK:           %[[S:.*]] = arith.addf
// CHECK-NEXT:      %[[SH:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK-NOT:       memref.load
// CHECK:           arith.extf %[[SH]] : f16 to f32
// CHECK-NEXT:      arith.extf %[[SH]] : f16 to f32
// CHECK-NEXT:      %[[P:.*]] = arith.mulf
// CHECK-NEXT:      %[[PH:.*]] = arith.truncf %[[P]] : f32 to f16
// CHECK:           %[[RV:.*]] = arith.extf %[[PH]] : f16 to f32
// CHECK-NEXT:      memref.store %[[RV]], %[[R]][%[[I]], %[[J]], %[[K]]] : memref<3x4x5xf32>
// CHECK-NEXT:    }
func.func @middle_broadcast(%x: tensor<3x4x5xf16>, %b: tensor<4x1xf16>) -> tensor<3x4x5xf32> {
  %s = kopt.add %x, %b : tensor<3x4x5xf16>, tensor<4x1xf16> -> tensor<3x4x5xf16>
  %g = kopt.mul %s, %s : tensor<3x4x5xf16>, tensor<3x4x5xf16> -> tensor<3x4x5xf16>
  %r = kopt.cast %g : tensor<3x4x5xf16> to tensor<3x4x5xf32>
  return %r : tensor<3x4x5xf32>
}
