// Input of tile-staged-epilogue.mlir: a matmul with f32 C.
func.func @f32_out(%x: tensor<512x4096xbf16>, %w: tensor<1000x4096xbf16>) -> tensor<512x1000xf32> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<512x4096xbf16>, tensor<1000x4096xbf16> -> tensor<512x1000xf32>
  return %y : tensor<512x1000xf32>
}
