// Residual connections and bias adds, with NumPy broadcasting.
//
// Shapes:
//   @llama_residual: Llama-3.1-8B, hidden_size 4096, bf16, T = 16 tokens:
//       h = x + attn_out, both [16, 4096] (no broadcasting).
//   @gpt2_xl_fc_bias: GPT-2 XL (n_embd 1600, MLP width 4 * 1600 = 6400), f32,
//       T = 1024 tokens (n_positions): c_fc's bias [6400] is added to every row of
//       x @ W [1024, 6400]: the bias is broadcast along the missing leading dimension.
//   @bert_large_bias: BERT-large (hidden 1024), f16, a batch of 8 sequences of 512
//       tokens as a rank-3 tensor [8, 512, 1024] plus the bias [1024].
//   @per_token_scale: a per-row scale [T, 1] (e.g. a per-token dequantization
//       factor) multiplied into [T, 4096]: the size-1 dimension is broadcast.
// One elementwise kernel per op; computed in f32 and rounded once.
//
// Compile:
//   build/bin/kopt-opt examples/residual_bias_add.mlir \
//       --kopt-to-ptx="output=out/residual_bias_add.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/residual_bias_add.ptx -o out/residual_bias_add.cubin

func.func @llama_residual(%x: tensor<16x4096xbf16>, %attn_out: tensor<16x4096xbf16>) -> tensor<16x4096xbf16> {
  %h = kopt.add %x, %attn_out : tensor<16x4096xbf16>, tensor<16x4096xbf16> -> tensor<16x4096xbf16>
  return %h : tensor<16x4096xbf16>
}

func.func @gpt2_xl_fc_bias(%xw: tensor<1024x6400xf32>, %b: tensor<6400xf32>) -> tensor<1024x6400xf32> {
  %y = kopt.add %xw, %b : tensor<1024x6400xf32>, tensor<6400xf32> -> tensor<1024x6400xf32>
  return %y : tensor<1024x6400xf32>
}

func.func @bert_large_bias(%xw: tensor<8x512x1024xf16>, %b: tensor<1024xf16>) -> tensor<8x512x1024xf16> {
  %y = kopt.add %xw, %b : tensor<8x512x1024xf16>, tensor<1024xf16> -> tensor<8x512x1024xf16>
  return %y : tensor<8x512x1024xf16>
}

func.func @per_token_scale(%x: tensor<16x4096xbf16>, %scale: tensor<16x1xbf16>) -> tensor<16x4096xbf16> {
  %y = kopt.mul %x, %scale : tensor<16x4096xbf16>, tensor<16x1xbf16> -> tensor<16x4096xbf16>
  return %y : tensor<16x4096xbf16>
}
