// Two matmul kernels for kopt-tune's tests (test/Tools/kopt-tune.test): a
// small prefill-like GEMM and a decode-like one.
func.func @f(%x: tensor<256x512xbf16>, %w: tensor<256x512xbf16>, %t: tensor<16x512xbf16>) -> (tensor<256x256xbf16>, tensor<16x256xbf16>) {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<256x512xbf16>, tensor<256x512xbf16> -> tensor<256x256xbf16>
  %1 = kopt.matmul %t, %w {transpose_b} : tensor<16x512xbf16>, tensor<256x512xbf16> -> tensor<16x256xbf16>
  return %0, %1 : tensor<256x256xbf16>, tensor<16x256xbf16>
}
