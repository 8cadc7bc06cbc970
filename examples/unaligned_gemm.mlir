// GEMMs whose operands the fast tensor-core schedules cannot read as they are stored.
//
// The wgmma and cp.async schedules copy A and B in 16-byte chunks along K: they need
// both operands contiguous along K (A stored [M, K], B stored [N, K]) and K a multiple
// of 8. kopt-pack-operands (docs/compiler.md, "Operand packing") rewrites these
// matmuls to read packed copies made by kopt.pack kernels, so the launch manifest
// holds pack kernels before each matmul kernel:
//   @odd:        4097 x 4095 x 4093 bf16, B stored [K, N] (row-major, as a NumPy or
//                torch tensor `b` in `a @ b`): A padded to K' = 4096, B transposed
//                and padded to [4095, 4096]; then the 128 x 256 wgmma schedule.
//                On the H200 this ran at 2.73x cuBLAS (bench/results/
//                2026-11-30-suite-h200-pack-splitk), which has no such packing.
//   @transposed: 2048 x 1024 x 512 f16 with A stored [K, M] (`a.T @ w.T`):
//                A is transposed into [M, K]; B is already [N, K].
//   @decode:     the same layout at M = 16 is left as it is (copying B would cost
//                more than the GEMM: each element of B is used by only 16 rows),
//                and runs the synchronous-copy mma.sync schedule.
//
// kopt-opt examples/unaligned_gemm.mlir --kopt-to-ptx="output=/tmp/u.ptx" writes the
// kernels; add pack-min-reuse=0 to the options to turn packing off and compare.

func.func @odd(%a: tensor<4097x4093xbf16>, %b: tensor<4093x4095xbf16>) -> tensor<4097x4095xbf16> {
  %c = kopt.matmul %a, %b : tensor<4097x4093xbf16>, tensor<4093x4095xbf16> -> tensor<4097x4095xbf16>
  return %c : tensor<4097x4095xbf16>
}

func.func @transposed(%a: tensor<512x2048xf16>, %w: tensor<1024x512xf16>) -> tensor<2048x1024xf16> {
  %c = kopt.matmul %a, %w {transpose_a, transpose_b} : tensor<512x2048xf16>, tensor<1024x512xf16> -> tensor<2048x1024xf16>
  return %c : tensor<2048x1024xf16>
}

func.func @decode(%x: tensor<16x4093xbf16>, %b: tensor<4093x4095xbf16>) -> tensor<16x4095xbf16> {
  %c = kopt.matmul %x, %b : tensor<16x4093xbf16>, tensor<4093x4095xbf16> -> tensor<16x4095xbf16>
  return %c : tensor<16x4095xbf16>
}
