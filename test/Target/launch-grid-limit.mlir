// XFAIL: *
// Compiler bug: the matmul kernel builder puts ceil(M / 64) blocks on grid.y with no
// check against CUDA's limit of 65535, so M > 65535 * 64 = 4194240 compiles without a
// diagnostic into a manifest whose launch fails (CUDA_ERROR_INVALID_VALUE). Here
// M = 4194368 gives grid [1, 65537, 1]. Expected: a launchable grid (e.g. M on
// grid.x) or an error at compile time. When fixed, delete the XFAIL line.
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: %python %S/Inputs/check-launch-dims.py %t.json

func.func @tall(%a: tensor<4194368x16xf32>, %b: tensor<16x16xf32>) -> tensor<4194368x16xf32> {
  %c = kopt.matmul %a, %b : tensor<4194368x16xf32>, tensor<16x16xf32> -> tensor<4194368x16xf32>
  return %c : tensor<4194368x16xf32>
}
