// A matmul whose B is stored [K, N] (not K-contiguous): kopt-pack-operands
// packs it, so the kernel kopt-tune tunes reads the packed [N, K] copy and its
// workload key says bk (test/Tools/kopt-tune.test).
func.func @f(%x: tensor<256x512xbf16>, %w: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  %0 = kopt.matmul %x, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %0 : tensor<256x256xbf16>
}
