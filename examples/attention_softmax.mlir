// The softmax of Llama-3.1-8B's attention scores, as Hugging Face's eager attention
// computes it: scores = Q K^T * (1 / sqrt(head_dim)) + mask, softmax in f32, cast to
// the model's dtype (bf16) before P V.
//
// Shapes (Llama-3.1-8B config.json): num_attention_heads 32, head_dim 128, so the
// scale is 1 / sqrt(128) = 0.08838834764831845. kopt has no constants at function
// level, so the scale comes in as a rank-0 tensor argument and is broadcast.
//   @decode: 16 sequences, one new query each, attending to a KV cache of 2048
//       positions: scores [16 * 32, 2048] (rows = sequence x head), no mask needed.
//   @prefill: one 2048-token prompt: scores [1, 32, 2048, 2048] (batch, heads,
//       queries, keys) plus the additive causal mask [2048, 2048] (0 on and below
//       the diagonal, -inf above), broadcast over batch and heads.
// Kernels: mul (elementwise), add (elementwise), softmax (row: one block per row),
// cast (elementwise).
//
// Compile:
//   build/bin/kopt-opt examples/attention_softmax.mlir \
//       --kopt-to-ptx="output=out/attention_softmax.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/attention_softmax.ptx -o out/attention_softmax.cubin

func.func @decode(%scores: tensor<512x2048xf32>, %scale: tensor<f32>) -> tensor<512x2048xbf16> {
  %s = kopt.mul %scores, %scale : tensor<512x2048xf32>, tensor<f32> -> tensor<512x2048xf32>
  %p = kopt.softmax %s : tensor<512x2048xf32>
  %pb = kopt.cast %p : tensor<512x2048xf32> to tensor<512x2048xbf16>
  return %pb : tensor<512x2048xbf16>
}

func.func @prefill(%scores: tensor<1x32x2048x2048xf32>, %scale: tensor<f32>,
                   %causal_mask: tensor<2048x2048xf32>) -> tensor<1x32x2048x2048xbf16> {
  %s = kopt.mul %scores, %scale : tensor<1x32x2048x2048xf32>, tensor<f32> -> tensor<1x32x2048x2048xf32>
  %m = kopt.add %s, %causal_mask : tensor<1x32x2048x2048xf32>, tensor<2048x2048xf32> -> tensor<1x32x2048x2048xf32>
  %p = kopt.softmax %m : tensor<1x32x2048x2048xf32>
  %pb = kopt.cast %p : tensor<1x32x2048x2048xf32> to tensor<1x32x2048x2048xbf16>
  return %pb : tensor<1x32x2048x2048xbf16>
}
