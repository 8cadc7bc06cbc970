// Conversions between f32, bf16 and f16 (round to nearest even).
//
// Shapes:
//   @logits_to_bf16: Llama-3.1-8B logits (vocab_size 128256) for 16 sequences, f32
//       -> bf16 (e.g. to halve the memory of stored logits).
//   @hidden_to_f32:  Llama-3.1-8B hidden states (hidden_size 4096), 16 tokens, bf16
//       -> f32 (e.g. before an f32 residual stream or a numerically careful
//       reduction).
//   @fp16_to_bf16:   BERT-large hidden states [4096, 1024] (8 x 512 tokens) from an
//       f16 checkpoint to bf16 (f16 -> f32 is exact; one rounding to bf16; values
//       beyond bf16's precision lose mantissa bits, but none overflow).
//
// Compile:
//   build/bin/kopt-opt examples/cast.mlir --kopt-to-ptx="output=out/cast.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/cast.ptx -o out/cast.cubin

func.func @logits_to_bf16(%logits: tensor<16x128256xf32>) -> tensor<16x128256xbf16> {
  %y = kopt.cast %logits : tensor<16x128256xf32> to tensor<16x128256xbf16>
  return %y : tensor<16x128256xbf16>
}

func.func @hidden_to_f32(%h: tensor<16x4096xbf16>) -> tensor<16x4096xf32> {
  %y = kopt.cast %h : tensor<16x4096xbf16> to tensor<16x4096xf32>
  return %y : tensor<16x4096xf32>
}

func.func @fp16_to_bf16(%h: tensor<4096x1024xf16>) -> tensor<4096x1024xbf16> {
  %y = kopt.cast %h : tensor<4096x1024xf16> to tensor<4096x1024xbf16>
  return %y : tensor<4096x1024xbf16>
}
