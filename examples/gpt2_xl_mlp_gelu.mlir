// The MLP of a GPT-2 XL block: c_fc, GELU (tanh form), c_proj.
//
// Shapes (GPT-2 XL config.json): n_embd 1600, MLP width 4 * 1600 = 6400,
// activation_function "gelu_new" = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// i.e. gelu approximate(tanh); T = 1024 tokens (n_positions), f32. GPT-2's Conv1D
// stores its weight as [in, out] ([1600, 6400] for c_fc, [6400, 1600] for c_proj),
// so the products are plain x @ W (no transpose flag), plus the bias [out].
//   h   = gelu_tanh(x @ W_fc + b_fc)     [1024, 6400]
//   out = h @ W_proj + b_proj            [1024, 1600]
// Kernels: matmul, add, gelu, matmul, add.
//
// Compile:
//   build/bin/kopt-opt examples/gpt2_xl_mlp_gelu.mlir \
//       --kopt-to-ptx="output=out/gpt2_xl_mlp_gelu.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/gpt2_xl_mlp_gelu.ptx -o out/gpt2_xl_mlp_gelu.cubin

func.func @mlp(%x: tensor<1024x1600xf32>, %w_fc: tensor<1600x6400xf32>, %b_fc: tensor<6400xf32>,
               %w_proj: tensor<6400x1600xf32>, %b_proj: tensor<1600xf32>) -> tensor<1024x1600xf32> {
  %fc = kopt.matmul %x, %w_fc : tensor<1024x1600xf32>, tensor<1600x6400xf32> -> tensor<1024x6400xf32>
  %fcb = kopt.add %fc, %b_fc : tensor<1024x6400xf32>, tensor<6400xf32> -> tensor<1024x6400xf32>
  %h = kopt.gelu %fcb approximate(tanh) : tensor<1024x6400xf32>
  %proj = kopt.matmul %h, %w_proj : tensor<1024x6400xf32>, tensor<6400x1600xf32> -> tensor<1024x1600xf32>
  %out = kopt.add %proj, %b_proj : tensor<1024x1600xf32>, tensor<1600xf32> -> tensor<1024x1600xf32>
  return %out : tensor<1024x1600xf32>
}
