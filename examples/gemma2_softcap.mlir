// Gemma-2's logit soft-capping: logits = tanh(logits / cap) * cap with cap = 30
// (config.json: final_logit_softcapping 30.0, vocab_size 256000), on the LM head's
// f32 logits at decode (16 sequences). kopt-fuse makes the chain one elementwise
// kernel (`div_tanh_mul_0`: three ops, the scalar cap read by two of them, the two
// intermediate values in registers) where PyTorch eager launches three.
//
// Compile:
//   build/bin/kopt-opt examples/gemma2_softcap.mlir \
//       --kopt-to-ptx="output=out/gemma2_softcap.ptx" -o /dev/null
//   ptxas -arch=sm_90a out/gemma2_softcap.ptx -o out/gemma2_softcap.cubin
// Add `fuse=false` to the kopt-to-ptx options for three kernels instead.

func.func @softcap(%logits: tensor<16x256000xf32>, %cap: tensor<f32>) -> tensor<16x256000xf32> {
  %z = kopt.div %logits, %cap : tensor<16x256000xf32>, tensor<f32> -> tensor<16x256000xf32>
  %t = kopt.tanh %z : tensor<16x256000xf32>
  %y = kopt.mul %t, %cap : tensor<16x256000xf32>, tensor<f32> -> tensor<16x256000xf32>
  return %y : tensor<16x256000xf32>
}
