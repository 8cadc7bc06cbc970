// The output projection (lm_head) of Llama-3.1-8B: the last hidden state times the
// embedding-sized weight, giving one logit per vocabulary entry.
//
// Shapes (Llama-3.1-8B config.json): hidden_size 4096, vocab_size 128256; lm_head is
// an nn.Linear weight [128256, 4096], so logits = h @ W^T (kopt.matmul {transpose_b}).
// The weight is bf16; the logits are produced directly in f32 (the product is
// accumulated in f32 either way; an f32 result skips the rounding to bf16), as
// sampling code usually wants f32 logits.
//   @next_token: one sequence, the last position only: [1, 4096] -> [1, 128256]
//   @batch16:    16 sequences decoding together:       [16, 4096] -> [16, 128256]
// Then see logits_reduce.mlir and vocab_softmax.mlir for what is done with them.
//
// Compile:
//   build/bin/kopt-opt examples/llama_lm_head.mlir \
//       --kopt-to-ptx="output=out/llama_lm_head.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_lm_head.ptx -o out/llama_lm_head.cubin

func.func @next_token(%h: tensor<1x4096xbf16>, %w: tensor<128256x4096xbf16>) -> tensor<1x128256xf32> {
  %logits = kopt.matmul %h, %w {transpose_b} : tensor<1x4096xbf16>, tensor<128256x4096xbf16> -> tensor<1x128256xf32>
  return %logits : tensor<1x128256xf32>
}

func.func @batch16(%h: tensor<16x4096xbf16>, %w: tensor<128256x4096xbf16>) -> tensor<16x128256xf32> {
  %logits = kopt.matmul %h, %w {transpose_b} : tensor<16x4096xbf16>, tensor<128256x4096xbf16> -> tensor<16x128256xf32>
  return %logits : tensor<16x128256xf32>
}
