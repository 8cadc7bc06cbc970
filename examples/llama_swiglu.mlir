// The SwiGLU activation of the Llama-3.1-8B MLP: act = silu(gate) * up, between the
// gate/up projections and down_proj (llama_mlp_matmul.mlir).
//
// Shapes (Llama-3.1-8B config.json): intermediate_size 14336, hidden_act "silu";
// gate = x @ W_gate^T and up = x @ W_up^T are [T, 14336] bf16. T = 16 tokens at
// decode, 2048 at prefill. silu(x) = x * sigmoid(x) = x / (1 + exp(-x)).
// One kernel per function (kopt-fuse fuses the chain: `silu_mul_<n>`), computed in
// f32 and rounded to bf16 once per op, as two kernels would; silu's result stays in
// registers.
//
// Compile:
//   build/bin/kopt-opt examples/llama_swiglu.mlir \
//       --kopt-to-ptx="output=out/llama_swiglu.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_swiglu.ptx -o out/llama_swiglu.cubin

func.func @decode(%gate: tensor<16x14336xbf16>, %up: tensor<16x14336xbf16>) -> tensor<16x14336xbf16> {
  %s = kopt.silu %gate : tensor<16x14336xbf16>
  %act = kopt.mul %s, %up : tensor<16x14336xbf16>, tensor<16x14336xbf16> -> tensor<16x14336xbf16>
  return %act : tensor<16x14336xbf16>
}

func.func @prefill(%gate: tensor<2048x14336xbf16>, %up: tensor<2048x14336xbf16>) -> tensor<2048x14336xbf16> {
  %s = kopt.silu %gate : tensor<2048x14336xbf16>
  %act = kopt.mul %s, %up : tensor<2048x14336xbf16>, tensor<2048x14336xbf16> -> tensor<2048x14336xbf16>
  return %act : tensor<2048x14336xbf16>
}
