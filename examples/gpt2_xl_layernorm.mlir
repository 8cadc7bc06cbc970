// LayerNorm of GPT-2 XL (ln_1, ln_2, ln_f), with weight and bias.
//
// Shapes (GPT-2 XL config.json): n_embd 1600, layer_norm_epsilon 1e-5, n_positions
// 1024; f32 as released. y = (x - mean) / sqrt(var + 1e-5) * weight + bias over the
// last dimension, with the biased variance (divided by 1600), as torch.nn.LayerNorm.
//   @full_context: one 1024-token sequence            [1024, 1600]
//   @batch:        4 sequences of 1024 tokens, rank 3 [4, 1024, 1600]
// Row kernels: one block of 256 threads per row.
//
// Compile:
//   build/bin/kopt-opt examples/gpt2_xl_layernorm.mlir \
//       --kopt-to-ptx="output=out/gpt2_xl_layernorm.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/gpt2_xl_layernorm.ptx -o out/gpt2_xl_layernorm.cubin

func.func @full_context(%x: tensor<1024x1600xf32>, %w: tensor<1600xf32>, %b: tensor<1600xf32>) -> tensor<1024x1600xf32> {
  %y = kopt.layernorm %x weight(%w : tensor<1600xf32>) bias(%b : tensor<1600xf32>) eps = 1.0e-05 : tensor<1024x1600xf32>
  return %y : tensor<1024x1600xf32>
}

func.func @batch(%x: tensor<4x1024x1600xf32>, %w: tensor<1600xf32>, %b: tensor<1600xf32>) -> tensor<4x1024x1600xf32> {
  %y = kopt.layernorm %x weight(%w : tensor<1600xf32>) bias(%b : tensor<1600xf32>) eps = 1.0e-05 : tensor<4x1024x1600xf32>
  return %y : tensor<4x1024x1600xf32>
}
