// Softmax over the vocabulary: next-token probabilities from Llama-3.1-8B's logits.
//
// Shapes (Llama-3.1-8B config.json): vocab_size 128256. The logits come out of
// lm_head in f32 (llama_lm_head.mlir); sampling with a temperature divides them by
// it first (here a rank-0 tensor argument, broadcast), then takes the softmax over
// the last dimension.
//   @decode16:  16 sequences, one position each:     [16, 128256]
//   @prefill:   all 2048 positions of one prompt (e.g. for scoring a text's
//               log-likelihood):                       [2048, 128256]
// Row kernels with 1024 threads per row (128256 / 8 columns per thread, capped).
//
// Compile:
//   build/bin/kopt-opt examples/vocab_softmax.mlir \
//       --kopt-to-ptx="output=out/vocab_softmax.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/vocab_softmax.ptx -o out/vocab_softmax.cubin

func.func @decode16(%logits: tensor<16x128256xf32>, %temperature: tensor<f32>) -> tensor<16x128256xf32> {
  %t = kopt.div %logits, %temperature : tensor<16x128256xf32>, tensor<f32> -> tensor<16x128256xf32>
  %p = kopt.softmax %t : tensor<16x128256xf32>
  return %p : tensor<16x128256xf32>
}

func.func @prefill(%logits: tensor<2048x128256xf32>) -> tensor<2048x128256xf32> {
  %p = kopt.softmax %logits : tensor<2048x128256xf32>
  return %p : tensor<2048x128256xf32>
}
