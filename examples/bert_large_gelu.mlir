// The feed-forward block of BERT-large: intermediate dense + GELU (erf form) + output
// dense.
//
// Shapes (bert-large-uncased config.json): hidden_size 1024, intermediate_size 4096,
// hidden_act "gelu" = 0.5 x (1 + erf(x / sqrt 2)), the exact GELU (gelu with the
// default approximate(none)); a batch of 8 sequences of 512 tokens flattened to
// [4096, 1024]; f16. The dense layers are nn.Linear (weight [out, in]), hence
// {transpose_b}, with f32 accumulation.
//   h   = gelu(x @ W_i^T + b_i)    [4096, 4096]
//   out = h @ W_o^T + b_o          [4096, 1024]
//
// Compile:
//   build/bin/kopt-opt examples/bert_large_gelu.mlir \
//       --kopt-to-ptx="output=out/bert_large_gelu.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/bert_large_gelu.ptx -o out/bert_large_gelu.cubin

func.func @ffn(%x: tensor<4096x1024xf16>, %w_i: tensor<4096x1024xf16>, %b_i: tensor<4096xf16>,
               %w_o: tensor<1024x4096xf16>, %b_o: tensor<1024xf16>) -> tensor<4096x1024xf16> {
  %i = kopt.matmul %x, %w_i {transpose_b} : tensor<4096x1024xf16>, tensor<4096x1024xf16> -> tensor<4096x4096xf16>
  %ib = kopt.add %i, %b_i : tensor<4096x4096xf16>, tensor<4096xf16> -> tensor<4096x4096xf16>
  %h = kopt.gelu %ib : tensor<4096x4096xf16>
  %o = kopt.matmul %h, %w_o {transpose_b} : tensor<4096x4096xf16>, tensor<1024x4096xf16> -> tensor<4096x1024xf16>
  %out = kopt.add %o, %b_o : tensor<4096x1024xf16>, tensor<1024xf16> -> tensor<4096x1024xf16>
  return %out : tensor<4096x1024xf16>
}
