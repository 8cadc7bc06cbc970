// Reductions over Llama-3.1-8B's logits: the row max (greedy decoding takes the
// argmax; the max is also the stabilizer of log-sum-exp), the row mean and sum.
//
// Shapes (Llama-3.1-8B config.json): vocab_size 128256; f32 logits from lm_head
// (llama_lm_head.mlir) for 16 sequences: [16, 128256]. kopt.reduce works on the last
// dimension and accumulates in f32; the result drops that dimension.
//   @stats:       max, mean and sum of each row                 -> [16] each
//   @log_sum_exp: lse = m + log(sum(exp(x - m))) with m = max(x) needs a log, which
//                 kopt lacks: this takes m (the max from @stats, passed as [16, 1]
//                 since kopt has no reshape), subtracts it with broadcasting and
//                 returns sum(exp(x - m)); the caller adds m + log(sum).
//   @single:      one sequence as a rank-1 tensor: the max is a rank-0 tensor.
//
// Compile:
//   build/bin/kopt-opt examples/logits_reduce.mlir \
//       --kopt-to-ptx="output=out/logits_reduce.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/logits_reduce.ptx -o out/logits_reduce.cubin

func.func @stats(%logits: tensor<16x128256xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %max = kopt.reduce max %logits : tensor<16x128256xf32> -> tensor<16xf32>
  %mean = kopt.reduce mean %logits : tensor<16x128256xf32> -> tensor<16xf32>
  %sum = kopt.reduce sum %logits : tensor<16x128256xf32> -> tensor<16xf32>
  return %max, %mean, %sum : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

func.func @log_sum_exp(%logits: tensor<16x128256xf32>, %row_max: tensor<16x1xf32>) -> tensor<16xf32> {
  %shifted = kopt.sub %logits, %row_max : tensor<16x128256xf32>, tensor<16x1xf32> -> tensor<16x128256xf32>
  %e = kopt.exp %shifted : tensor<16x128256xf32>
  %sum = kopt.reduce sum %e : tensor<16x128256xf32> -> tensor<16xf32>
  return %sum : tensor<16xf32>
}

func.func @single(%logits: tensor<128256xf32>) -> (tensor<f32>, tensor<f32>) {
  %max = kopt.reduce max %logits : tensor<128256xf32> -> tensor<f32>
  %mean = kopt.reduce mean %logits : tensor<128256xf32> -> tensor<f32>
  return %max, %mean : tensor<f32>, tensor<f32>
}
