// Tensors with a dimension of size 0 would need an empty grid, which CUDA refuses:
// kopt-lower-to-gpu rejects them with a located error.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile -verify-diagnostics

func.func @zero_rows(%x: tensor<0x8xf32>, %b: tensor<8x4xf32>) -> tensor<0x4xf32> {
  // expected-error @+1 {{'kopt.kernel' op has a tensor with a zero-size dimension ('tensor<0x8xf32>'); kopt does not compile empty tensors}}
  %y = kopt.matmul %x, %b : tensor<0x8xf32>, tensor<8x4xf32> -> tensor<0x4xf32>
  return %y : tensor<0x4xf32>
}

// -----

func.func @zero_columns(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kopt.kernel' op has a tensor with a zero-size dimension ('tensor<4x0xf32>'); kopt does not compile empty tensors}}
  %y = kopt.reduce sum %x : tensor<4x0xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
