// BERT-large's "Add & Norm": LayerNorm(hidden + residual) after attention and after
// the feed-forward block (BertSelfOutput / BertOutput in Hugging Face).
//
// Shapes (bert-large-uncased config.json): hidden_size 1024, layer_norm_eps 1e-12,
// max_position_embeddings 512; a batch of 8 sequences of 512 tokens flattened to
// [8 * 512, 1024] = [4096, 1024], in f16 (mixed-precision inference). LayerNorm with
// weight and bias; statistics in f32, one rounding to f16. eps = 1e-12 is below
// f16's range but it is applied in f32, where it is representable.
//   @add_norm: h = hidden + residual; y = layernorm(h)
//   @norm_no_affine: LayerNorm without weight and bias (elementwise_affine=False)
//
// Compile:
//   build/bin/kopt-opt examples/bert_large_layernorm.mlir \
//       --kopt-to-ptx="output=out/bert_large_layernorm.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/bert_large_layernorm.ptx -o out/bert_large_layernorm.cubin

func.func @add_norm(%hidden: tensor<4096x1024xf16>, %residual: tensor<4096x1024xf16>,
                    %w: tensor<1024xf16>, %b: tensor<1024xf16>) -> tensor<4096x1024xf16> {
  %h = kopt.add %hidden, %residual : tensor<4096x1024xf16>, tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  %y = kopt.layernorm %h weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>) eps = 1.0e-12 : tensor<4096x1024xf16>
  return %y : tensor<4096x1024xf16>
}

func.func @norm_no_affine(%x: tensor<4096x1024xf16>) -> tensor<4096x1024xf16> {
  %y = kopt.layernorm %x eps = 1.0e-12 : tensor<4096x1024xf16>
  return %y : tensor<4096x1024xf16>
}
