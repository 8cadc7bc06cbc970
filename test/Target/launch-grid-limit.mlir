// Every launch stays inside CUDA's grid limits. A matmul with more than 65535 row
// tiles (M = 8388736 = 65537 * 128, the default f32 block tile has 128 rows) gets a 1-D grid over its tiles (grid.x allows
// 2^31 - 1 blocks) instead of one with grid.y > 65535.
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %python %S/Inputs/check-launch-dims.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=GRID < %t.json

// CHECK: ok
// GRID: "grid": [
// GRID-NEXT: 65537,
// GRID-NEXT: 1,
// GRID-NEXT: 1
func.func @tall(%a: tensor<8388736x16xf32>, %b: tensor<16x16xf32>) -> tensor<8388736x16xf32> {
  %c = kopt.matmul %a, %b : tensor<8388736x16xf32>, tensor<16x16xf32> -> tensor<8388736x16xf32>
  return %c : tensor<8388736x16xf32>
}
