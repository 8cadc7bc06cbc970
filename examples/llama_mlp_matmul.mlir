// The three MLP projections of a Llama-3.1-8B decoder layer (bf16, f32 accumulation).
//
// Shapes (Llama-3.1-8B config.json): hidden_size 4096, intermediate_size 14336. The
// weights are PyTorch nn.Linear weights, stored [out_features, in_features], so each
// projection is y = x @ W^T: kopt.matmul with {transpose_b}.
//   gate_proj, up_proj: W [14336, 4096]    x [T, 4096]  -> [T, 14336]
//   down_proj:          W [4096, 14336]    h [T, 14336] -> [T, 4096]
// T is the number of tokens in flight: 16 in @decode (a batch of 16 sequences, one
// new token each), 2048 in @prefill (one 2048-token prompt).
// Each kopt.matmul becomes one kernel of the matmul class, with the schedule the default
// heuristic picks for its shape (docs/schedules.md; --kopt-print-space shows it).
//
// Compile (from the repository root):
//   build/bin/kopt-opt examples/llama_mlp_matmul.mlir \
//       --kopt-to-ptx="output=out/llama_mlp_matmul.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/llama_mlp_matmul.ptx -o out/llama_mlp_matmul.cubin
// or: scripts/run-examples.sh examples/llama_mlp_matmul.mlir

func.func @decode(%x: tensor<16x4096xbf16>, %w_gate: tensor<14336x4096xbf16>,
                  %w_up: tensor<14336x4096xbf16>, %h: tensor<16x14336xbf16>,
                  %w_down: tensor<4096x14336xbf16>)
    -> (tensor<16x14336xbf16>, tensor<16x14336xbf16>, tensor<16x4096xbf16>) {
  %gate = kopt.matmul %x, %w_gate {transpose_b}
      : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %up = kopt.matmul %x, %w_up {transpose_b}
      : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
  %down = kopt.matmul %h, %w_down {transpose_b}
      : tensor<16x14336xbf16>, tensor<4096x14336xbf16> -> tensor<16x4096xbf16>
  return %gate, %up, %down : tensor<16x14336xbf16>, tensor<16x14336xbf16>, tensor<16x4096xbf16>
}

func.func @prefill(%x: tensor<2048x4096xbf16>, %w_gate: tensor<14336x4096xbf16>,
                   %h: tensor<2048x14336xbf16>, %w_down: tensor<4096x14336xbf16>)
    -> (tensor<2048x14336xbf16>, tensor<2048x4096xbf16>) {
  %gate = kopt.matmul %x, %w_gate {transpose_b}
      : tensor<2048x4096xbf16>, tensor<14336x4096xbf16> -> tensor<2048x14336xbf16>
  %down = kopt.matmul %h, %w_down {transpose_b}
      : tensor<2048x14336xbf16>, tensor<4096x14336xbf16> -> tensor<2048x4096xbf16>
  return %gate, %down : tensor<2048x14336xbf16>, tensor<2048x4096xbf16>
}
