// 100 x 96 x 64 bf16 with B stored [N, K] (an nn.Linear weight), for the
// schedules that need both operands contiguous along K (wgmma).
func.func @gemm_nt(%a: tensor<100x64xbf16>, %b: tensor<96x64xbf16>) -> tensor<100x96xbf16> {
  %0 = kopt.matmul %a, %b {transpose_b} : tensor<100x64xbf16>, tensor<96x64xbf16> -> tensor<100x96xbf16>
  return %0 : tensor<100x96xbf16>
}
