// Input of pipeline.mlir: a kopt.mainloop written by hand, synchronous copies
// (mma_sync schedule, copy = sync), a body that reads one element of A's tile.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @mainloop(%A: memref<70x40xf16>, %B: memref<40x90xf16>, %out: memref<1xf32>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x40xf16>, memref<40x90xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        %c0 = arith.constant 0 : index
        %x = memref.load %ta[%c0, %c0] : memref<64x40xf16, 3>
        %xf = arith.extf %x : f16 to f32
        %s = arith.addf %acc, %xf : f32
        kopt.yield %s : f32
      }
      %c0 = arith.constant 0 : index
      memref.store %r, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }
}
