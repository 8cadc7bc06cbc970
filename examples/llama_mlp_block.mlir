// A whole Llama-3.1-8B MLP block at decode time, as the decoder layer runs it:
//   y   = rmsnorm(h) * w_norm                     (post_attention_layernorm, eps 1e-5)
//   act = silu(y @ W_gate^T) * (y @ W_up^T)       (SwiGLU)
//   out = h + act @ W_down^T                      (down_proj and the residual)
// Shapes (Llama-3.1-8B config.json): hidden 4096, intermediate 14336, bf16, T = 16
// tokens; weights are nn.Linear weights [out, in] (hence {transpose_b}).
// Seven ops, six kernels today (row, matmul, matmul, silu and mul fused into one
// elementwise kernel, matmul, elementwise); the intermediates between kernels live
// in buffers that the manifest lists.
//
// Compile:
//   build/bin/kopt-opt examples/llama_mlp_block.mlir \
//       --kopt-to-ptx="output=out/llama_mlp_block.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_mlp_block.ptx -o out/llama_mlp_block.cubin

func.func @mlp_block(%h: tensor<16x4096xbf16>, %w_norm: tensor<4096xbf16>,
                     %w_gate: tensor<14336x4096xbf16>, %w_up: tensor<14336x4096xbf16>,
                     %w_down: tensor<4096x14336xbf16>) -> tensor<16x4096xbf16> {
  %y = kopt.rmsnorm %h weight(%w_norm : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  %gate = kopt.matmul %y, %w_gate {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %up = kopt.matmul %y, %w_up {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %s = kopt.silu %gate : tensor<16x14336xbf16>
  %act = kopt.mul %s, %up : tensor<16x14336xbf16>, tensor<16x14336xbf16> -> tensor<16x14336xbf16>
  %down = kopt.matmul %act, %w_down {transpose_b} : tensor<16x14336xbf16>, tensor<4096x14336xbf16> -> tensor<16x4096xbf16>
  %out = kopt.add %h, %down : tensor<16x4096xbf16>, tensor<16x4096xbf16> -> tensor<16x4096xbf16>
  return %out : tensor<16x4096xbf16>
}
