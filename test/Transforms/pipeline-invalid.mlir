// Diagnostics of kopt.mainloop's verifier and of kopt-pipeline.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics --kopt-pipeline
// Passes out of order say which to run first.
// RUN: not kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-pipeline 2>&1 | FileCheck %s --check-prefix=BEFORE-TILE
// RUN: not kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-tile 2>&1 | FileCheck %s --check-prefix=BEFORE-OUTLINE
// kopt-fuse groups operators, not a mainloop.
// RUN: kopt-opt %S/Inputs/mainloop-sync.mlir --kopt-fuse | FileCheck %s --check-prefix=FUSE
// BEFORE-TILE: error: 'kopt.kernel' op is not built yet: run kopt-tile before kopt-pipeline
// BEFORE-OUTLINE: error: 'kopt.kernel' op is not outlined into a gpu.func: run kopt-lower-to-gpu before kopt-tile
// FUSE-NOT: kopt.kernel
// FUSE: kopt.mainloop
// FUSE-NOT: kopt.kernel


#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op stages operand tiles for tensor-core schedules only (mma_sync, wgmma)}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = ffma, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op takes two tensor maps (copy = tma)}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, barrier_offset = 0 : i64} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op needs barrier_offset exactly when copy = tma}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, barrier_offset = 0 : i64} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op body argument 0 must be a static shared-memory (address space 3) memref with the identity layout}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %kt: index) kernel {
      %zero = arith.constant 0.0 : f32
      
      // expected-error @+1 {{'kopt.mainloop' op k_tiles must be a positive constant}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %kt iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op staged tiles 'memref<32x40xf16, 3>', 'memref<64x40xf16, 3>' do not fit the schedule's 64 x 64 x 32 tile}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<32x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op mma_sync mainloops take cp_async or sync copies, one tile per block}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op in a persistent grid must be the body of the block's tile loop (scf.for)}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xi8>, %B: memref<90x64xi8>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op operands must be f16 or bf16 (or f32 for wgmma's TF32), got 'i8'}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xi8>, memref<90x64xi8> -> f32 {
      ^bb0(%ta: memref<64x40xi8, 3>, %tb: memref<64x40xi8, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op needs the accumulators as iter_args}}
      kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>):
        kopt.yield
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
func.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) {
  %zero = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op must be inside a gpu.func (kopt-tile builds it there)}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
  return
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op the block tile 64 x 64 is not made of warp tiles 7 x 32}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 7, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op staged tiles 'memref<64x40xf16, 3>', 'memref<64x8xf16, 3>' must have the same K layout}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x8xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op needs at least 2 stages for wgmma, got 1}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xbf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op A and B must have the same element type, got 'f16' and 'bf16'}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xbf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op body argument 0 must hold the operands' element type 'f16'}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xbf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op body argument 0 must be a 3-D tile for wgmma, got 'memref<64x40xf16, 3>'}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op barrier_offset must be a non-negative multiple of 8 bytes, got 3}}
      %r = kopt.mainloop %A, %B maps(%ma, %mb) tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, barrier_offset = 3 : i64} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf32>, %B: memref<90x64xf32>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op f32 (TF32) operands are staged by copy = tma only}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf32>, memref<90x64xf32> -> f32 {
      ^bb0(%ta: memref<2x64x32xf32, 3>, %tb: memref<2x64x32xf32, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<64x90xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op copy = cp_async needs A and B contiguous along K and K a multiple of 16 bytes}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #bt], schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<64x90xf16> -> f32 {
      ^bb0(%ta: memref<64x40xf16, 3>, %tb: memref<64x40xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{'kopt.mainloop' op cp.async copies of 16 bytes: a 16 x 8 tile is not a whole number of copies for each of the 64 threads}}
      %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 16, block_n = 64, block_k = 8, warp_m = 16, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
      ^bb0(%ta: memref<16x16xf16, 3>, %tb: memref<64x16xf16, 3>, %acc: f32):
        kopt.yield %acc : f32
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.if %c {
        // expected-error @+1 {{'kopt.mainloop' op with warp_specialize must be in the gpu.func's body (the consumers' code after it moves into their branch)}}
        %r = kopt.mainloop %A, %B maps(%ma, %mb) tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false, warp_specialize = true>, barrier_offset = 65536 : i64} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
        ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
          kopt.yield %acc : f32
        }
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c1 to %t step %c1 {
        // expected-error @+1 {{'kopt.mainloop' op in a persistent grid must be the body of the block's tile loop, an scf.for from 0 step 1}}
        %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
        ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
          kopt.yield %acc : f32
        }
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.if %c {
        scf.for %i = %c0 to %t step %c1 {
          // expected-error @+1 {{'kopt.mainloop' op in a persistent grid: the tile loop must be in the gpu.func's body}}
          %r = kopt.mainloop %A, %B tile(%m0, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
          ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
            kopt.yield %acc : f32
          }
        }
      }
      gpu.return
    }
  }
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#bt = affine_map<(m, n, k) -> (k, n)>
module {
  gpu.module @kernels {
    gpu.func @k(%A: memref<70x64xf16>, %B: memref<90x64xf16>, %m0: index, %n0: index, %ma: i64, %mb: i64, %c: i1, %t: index) kernel {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %s = scf.for %i = %c0 to %t step %c1 iter_args(%m = %m0) -> (index) {
        // expected-error @+1 {{'kopt.mainloop' op the tile origin of a persistent grid must be computed from the tile loop's induction variable, not from its iteration arguments}}
        %r = kopt.mainloop %A, %B tile(%m, %n0) k_tiles %c2 iter_args(%zero : f32) {indexing_maps = [#a, #b], schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>} : memref<70x64xf16>, memref<90x64xf16> -> f32 {
        ^bb0(%ta: memref<1x64x64xf16, 3>, %tb: memref<1x64x64xf16, 3>, %acc: f32):
          kopt.yield %acc : f32
        }
        scf.yield %m : index
      }
      gpu.return
    }
  }
}
