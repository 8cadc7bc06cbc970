// RMSNorm of Llama-3.1-8B (input_layernorm / post_attention_layernorm / final norm).
//
// Shapes (Llama-3.1-8B config.json): hidden_size 4096, rms_norm_eps 1e-5; the weight is
// [4096] bf16. y = x / sqrt(mean(x^2) + 1e-5) * weight over the last dimension, computed
// in f32 and rounded to bf16 once. (Hugging Face's LlamaRMSNorm rounds x * rstd to
// bf16 before multiplying by the weight, so results can differ from it by one bf16
// rounding; see docs/ops.md.)
//   @decode:   T = 16 tokens                 [16, 4096]
//   @prefill:  T = 2048 tokens               [2048, 4096]
//   @residual_then_norm: the pre-norm block pattern h = x + attn_out, y = rmsnorm(h)
//                        (both h and y are results: h is the next residual).
// One row kernel per rmsnorm (one block of 512 threads per row).
//
// Compile:
//   build/bin/kopt-opt examples/llama_rmsnorm.mlir \
//       --kopt-to-ptx="output=out/llama_rmsnorm.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_rmsnorm.ptx -o out/llama_rmsnorm.cubin

func.func @decode(%x: tensor<16x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<16x4096xbf16> {
  %y = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  return %y : tensor<16x4096xbf16>
}

func.func @prefill(%x: tensor<2048x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<2048x4096xbf16> {
  %y = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<2048x4096xbf16>
  return %y : tensor<2048x4096xbf16>
}

func.func @residual_then_norm(%x: tensor<16x4096xbf16>, %attn_out: tensor<16x4096xbf16>,
                              %w: tensor<4096xbf16>) -> (tensor<16x4096xbf16>, tensor<16x4096xbf16>) {
  %h = kopt.add %x, %attn_out : tensor<16x4096xbf16>, tensor<16x4096xbf16> -> tensor<16x4096xbf16>
  %y = kopt.rmsnorm %h weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  return %h, %y : tensor<16x4096xbf16>, tensor<16x4096xbf16>
}
