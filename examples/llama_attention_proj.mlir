// The attention projections of a Llama-3.1-8B decoder layer at decode time (bf16).
//
// Shapes (Llama-3.1-8B config.json): hidden_size 4096, num_attention_heads 32,
// num_key_value_heads 8 (grouped-query attention), head_dim 4096 / 32 = 128. The
// weights are nn.Linear weights [out_features, in_features]:
//   q_proj W [32 * 128, 4096] = [4096, 4096]
//   k_proj W [ 8 * 128, 4096] = [1024, 4096]
//   v_proj W [ 8 * 128, 4096] = [1024, 4096]
//   o_proj W [4096, 32 * 128] = [4096, 4096]
// with T = 16 tokens (16 sequences decoding one token each). q, k, v come out as
// [T, heads * 128]; the attention itself (per-head Q K^T, softmax, P V) is in
// attention_softmax.mlir for the softmax part (kopt.matmul is 2-D, so the batched
// per-head products are not expressed here).
//
// Compile:
//   build/bin/kopt-opt examples/llama_attention_proj.mlir \
//       --kopt-to-ptx="output=out/llama_attention_proj.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_attention_proj.ptx -o out/llama_attention_proj.cubin

func.func @qkv(%x: tensor<16x4096xbf16>, %wq: tensor<4096x4096xbf16>,
               %wk: tensor<1024x4096xbf16>, %wv: tensor<1024x4096xbf16>)
    -> (tensor<16x4096xbf16>, tensor<16x1024xbf16>, tensor<16x1024xbf16>) {
  %q = kopt.matmul %x, %wq {transpose_b} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %k = kopt.matmul %x, %wk {transpose_b} : tensor<16x4096xbf16>, tensor<1024x4096xbf16> -> tensor<16x1024xbf16>
  %v = kopt.matmul %x, %wv {transpose_b} : tensor<16x4096xbf16>, tensor<1024x4096xbf16> -> tensor<16x1024xbf16>
  return %q, %k, %v : tensor<16x4096xbf16>, tensor<16x1024xbf16>, tensor<16x1024xbf16>
}

// o_proj followed by the residual connection: h = x + attn @ Wo^T.
func.func @o_proj_residual(%attn: tensor<16x4096xbf16>, %wo: tensor<4096x4096xbf16>,
                           %residual: tensor<16x4096xbf16>) -> tensor<16x4096xbf16> {
  %o = kopt.matmul %attn, %wo {transpose_b} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %h = kopt.add %residual, %o : tensor<16x4096xbf16>, tensor<16x4096xbf16> -> tensor<16x4096xbf16>
  return %h : tensor<16x4096xbf16>
}
