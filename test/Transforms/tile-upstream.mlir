// kopt-tile's upstream step (--kopt-tile=tiling-only shows it alone): a matmul
// kernel's linalg body tiled by upstream MLIR's TilingInterface to the
// schedule's block tiles (tile-and-fuse: the epilogue tiled, the contraction and
// its fill fused into the scf.forall), padded with zeros to whole tiles
// (linalg::rewriteAsPaddedOp), its K dimension tiled (an scf.for carrying the
// accumulator) and each K tile of A and B promoted to shared memory
// (bufferization.alloc_tensor in workgroup memory and
// bufferization.materialize_in_destination, as transform.structured.promote_tensor
// does), then warp tiles and thread (instruction) tiles. The kernel stays linalg
// on tensors; kopt-tile's builder lowers this form.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | FileCheck %s
// The tiled form parses again, and building from it gives the same kernels
// as kopt-tile in one go.
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | kopt-opt -split-input-file --kopt-tile --kopt-pipeline > %t.two-steps.mlir
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline > %t.one-step.mlir
// RUN: diff %t.two-steps.mlir %t.one-step.mlir
// wgmma: the warp tiles are warpgroups'.
// RUN: kopt-opt %S/Inputs/gemm-nt.mlir --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-wgmma-ok.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | FileCheck %s --check-prefix=WGMMA
// kopt-tile builds only from a tiled kernel that is exactly what its upstream step
// makes for the kernel's schedule (it re-tiles the untiled body the tiled form stands
// for and compares): hand-edited tiled forms are rejected, each edit below alone (a payload that is
// no multiply-accumulate also fails the contraction check on the way).
// its schedule changed:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/block_m = 128, block_n = 256/block_m = 64, block_n = 256/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// a block tile loop from 4:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/= (0, 0) to (100, 96)/= (4, 0) to (100, 96)/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the K loop one tile short:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/scf.for %arg8 = %c0 to %c64 step %c32/scf.for %arg8 = %c0 to %c32 step %c32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// a fill of -0.0 (the same sums, but not kopt-tile's form), with the note:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/%cst = arith.constant 0.000000e+00 : f32/%cst = arith.constant -0.000000e+00 : f32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=KNOTE
// an instruction tile loop skipping half of K:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/scf.for %arg17 = %c0 to %c32 step %c16/scf.for %arg17 = %c0 to %c32 step %c32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// warp tiles of 32 rows:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/step (64, 64)/step (32, 64)/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// A and B padded with ones:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/%cst_0 = arith.constant 0.000000e+00 : bf16/%cst_0 = arith.constant 1.000000e+00 : bf16/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the accumulator filled with ones:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/%cst = arith.constant 0.000000e+00 : f32/%cst = arith.constant 1.000000e+00 : f32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the tiles promoted to private memory:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/address_space<workgroup>/address_space<private>/g' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the contraction's payload subtracting (acc - a * b):
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/arith.addf %out, %\([0-9]*\) : f32/arith.subf %out, %\1 : f32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the product negated before it is added (a unary op in the payload):
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/\(%[0-9]*\) = arith.addf %out, \(%[0-9]*\) : f32/%neg = arith.negf \2 : f32\n\1 = arith.addf %out, %neg : f32/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED
// the warp tiles mapped to blocks:
// RUN: kopt-opt %s -split-input-file --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/#gpu.warp<y>, #gpu.warp<x>/#gpu.block<y>, #gpu.block<x>/' | not kopt-opt -split-input-file --kopt-tile 2>&1 | FileCheck %s --check-prefix=EDITED

// 100 x 96 x 64 bf16 (default: mma.sync, 128 x 256 x 32 tiles): one partial
// block tile; the rounding epilogue tiled, the contraction and fill fused.
// CHECK-LABEL: gpu.func @matmul_0(
// CHECK:         kopt.kernel "matmul_0"
// CHECK-SAME:      block_m = 128, block_n = 256, block_k = 32
// CHECK:         ^bb0(%[[A:.*]]: tensor<100x64xbf16>, %[[B:.*]]: tensor<64x96xbf16>):
// CHECK-NOT:       linalg.generic
// CHECK:           %[[TILES:.*]] = scf.forall (%[[M0:.*]], %[[N0:.*]]) = (0, 0) to (100, 96) step (128, 256) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<100x96xbf16>)
// The valid rows and columns of the block tile.
// CHECK:             %[[ROWS:.*]] = affine.min #{{.*}}(%[[M0]])
// CHECK:             %[[COLS:.*]] = affine.min #{{.*}}(%[[N0]])
// CHECK:             %[[ASLICE:.*]] = tensor.extract_slice %[[A]][%[[M0]], 0] [%[[ROWS]], 64] [1, 1]
// CHECK:             %[[BSLICE:.*]] = tensor.extract_slice %[[B]][0, %[[N0]]] [64, %[[COLS]]] [1, 1]
// CHECK:             %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x?xf32>)
// Zero padding to whole tiles.
// CHECK:             %[[APAD:.*]] = tensor.pad %[[ASLICE]] low[0, 0] high[%{{.*}}, 0]
// CHECK:               tensor.yield %{{.*}} : bf16
// CHECK:             } : tensor<?x64xbf16> to tensor<128x64xbf16>
// CHECK:             %[[BPAD:.*]] = tensor.pad %[[BSLICE]] low[0, 0] high[0, %{{.*}}]
// CHECK:             } : tensor<64x?xbf16> to tensor<64x256xbf16>
// CHECK:             %[[ACC:.*]] = tensor.pad %[[FILL]] low[0, 0] high[%{{.*}}, %{{.*}}]
// CHECK:             } : tensor<?x?xf32> to tensor<128x256xf32>
// The K loop: 64 in K tiles of 32, each tile of A and B copied to shared memory.
// CHECK:             %[[K:.*]] = scf.for %[[K0:.*]] = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c32[_0-9]*}} iter_args(%[[C:.*]] = %[[ACC]]) -> (tensor<128x256xf32>)
// CHECK:               %[[AK:.*]] = tensor.extract_slice %[[APAD]][0, %[[K0]]] [128, 32] [1, 1]
// CHECK:               %[[BK:.*]] = tensor.extract_slice %[[BPAD]][%[[K0]], 0] [32, 256] [1, 1]
// CHECK:               %[[AALLOC:.*]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<128x32xbf16>
// CHECK:               %[[AS:.*]] = bufferization.materialize_in_destination %[[AK]] in %[[AALLOC]] : (tensor<128x32xbf16>, tensor<128x32xbf16>) -> tensor<128x32xbf16>
// CHECK:               %[[BALLOC:.*]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<32x256xbf16>
// CHECK:               %[[BS:.*]] = bufferization.materialize_in_destination %[[BK]] in %[[BALLOC]]
// Warp tiles: 2 x 4 warps of 64 x 64 (warp_m x warp_n), N fastest.
// CHECK:               %[[WARPS:.*]] = scf.forall (%[[WM:.*]], %[[WN:.*]]) = (0, 0) to (128, 256) step (64, 64) shared_outs(%[[CW:.*]] = %[[C]]) -> (tensor<128x256xf32>)
// CHECK:                 %[[AW:.*]] = tensor.extract_slice %[[AS]][%[[WM]], 0] [64, 32] [1, 1]
// CHECK:                 %[[BW:.*]] = tensor.extract_slice %[[BS]][0, %[[WN]]] [32, 64] [1, 1]
// CHECK:                 %[[ACCW:.*]] = tensor.extract_slice %[[CW]][%[[WM]], %[[WN]]] [64, 64] [1, 1]
// Instruction tiles (mma.sync m16n8k16): 4 x 8 x 2 per warp and K tile.
// CHECK:                 %[[IM:.*]] = scf.for %[[I:.*]] = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c16[_0-9]*}} iter_args(%{{.*}} = %[[ACCW]])
// CHECK:                   scf.for %[[J:.*]] = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c8[_0-9]*}}
// CHECK:                     scf.for %[[KK:.*]] = %{{c0[_0-9]*}} to %{{c32[_0-9]*}} step %{{c16[_0-9]*}}
// CHECK:                       %[[AI:.*]] = tensor.extract_slice %[[AW]][%[[I]], %[[KK]]] [16, 16] [1, 1]
// CHECK:                       %[[BI:.*]] = tensor.extract_slice %[[BW]][%[[KK]], %[[J]]] [16, 8] [1, 1]
// CHECK:                       %[[MM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[AI]], %[[BI]] : tensor<16x16xbf16>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK:                         arith.mulf
// CHECK:                         arith.addf
// CHECK:                       tensor.insert_slice %[[MM]]
// CHECK:                 scf.forall.in_parallel
// CHECK-NEXT:              tensor.parallel_insert_slice %[[IM]] into %[[CW]][%[[WM]], %[[WN]]] [64, 64] [1, 1]
// CHECK:               } {mapping = [#gpu.warp<y>, #gpu.warp<x>]}
// CHECK:               scf.yield %[[WARPS]] : tensor<128x256xf32>
// The epilogue on the valid part, inserted into the output.
// CHECK:             %[[VALID:.*]] = tensor.extract_slice %[[K]][0, 0] [%[[ROWS]], %[[COLS]]] [1, 1]
// CHECK:             %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[VALID]] : tensor<?x?xf32>)
// CHECK:               arith.truncf
// CHECK:             scf.forall.in_parallel
// CHECK-NEXT:          tensor.parallel_insert_slice %[[EPI]] into %[[OUT]][%[[M0]], %[[N0]]] [%[[ROWS]], %[[COLS]]] [1, 1]
// CHECK:           kopt.yield %[[TILES]]
// EDITED: error: 'kopt.kernel' op is tiled, but not as kopt-tile tiles it for its schedule (the tiled form is for reading: build from the untiled kernel)
// The note points at the first op that differs (here: the edited K loop).
// KNOTE: error: 'kopt.kernel' op is tiled, but not as kopt-tile tiles it
// KNOTE: note: the first op that differs from kopt-tile's tiling: 'arith.constant'
// WGMMA-LABEL: gpu.func @matmul_0(
// WGMMA:         instruction = wgmma, copy = cp_async, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256
// WGMMA:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (100, 96) step (128, 256)
// WGMMA:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c64[_0-9]*}}
// WGMMA:             scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 256) step (64, 256)
// Instruction tiles: wgmma m64n256k16, 4 K steps per K tile.
// WGMMA:               scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c64[_0-9]*}}
// WGMMA:                 scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c256[_0-9]*}} step %{{c256[_0-9]*}}
// WGMMA:                   scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c64[_0-9]*}} step %{{c16[_0-9]*}}
// WGMMA:                     linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x16xbf16>, tensor<256x16xbf16>) outs(%{{.*}} : tensor<64x256xf32>)
// WGMMA:             } {mapping = [#gpu.warpgroup<y>, #gpu.warpgroup<x>]}
func.func @gemm(%a: tensor<100x64xbf16>, %b: tensor<64x96xbf16>) -> tensor<100x96xbf16> {
  %0 = kopt.matmul %a, %b : tensor<100x64xbf16>, tensor<64x96xbf16> -> tensor<100x96xbf16>
  return %0 : tensor<100x96xbf16>
}

// -----

// f32 (no epilogue: the contraction is the root), K = 100 not a multiple of
// the K tile: padded to 104, 13 K tiles of 8 (default: ffma, 128 x 128 x 8).
// CHECK-LABEL: gpu.func @matmul_0(
// CHECK:         block_m = 128, block_n = 128, block_k = 8
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (256, 200) step (128, 128)
// CHECK:           } : tensor<128x100xf32> to tensor<128x104xf32>
// CHECK:           } : tensor<100x?xf32> to tensor<104x128xf32>
// CHECK:           %[[K:.*]] = scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c104[_0-9]*}} step %{{c8[_0-9]*}}
// CHECK:             bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<128x8xf32>
// CHECK:             bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<8x128xf32>
// Thread tiles: rounds of 64 x 64 (16 x 16 threads of 4 x 4 outputs), one
// forall iteration per thread.
// CHECK:             scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c128[_0-9]*}} step %{{c64[_0-9]*}}
// CHECK:               scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c128[_0-9]*}} step %{{c64[_0-9]*}}
// CHECK:                 scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 64) step (4, 4)
// CHECK:                   linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK:                 } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK:           %[[VALID:.*]] = tensor.extract_slice %[[K]][0, 0]
// CHECK-NOT:       linalg.generic
// CHECK:           tensor.parallel_insert_slice %[[VALID]]
func.func @f32_odd_k(%a: tensor<256x100xf32>, %b: tensor<100x200xf32>) -> tensor<256x200xf32> {
  %0 = kopt.matmul %a, %b : tensor<256x100xf32>, tensor<100x200xf32> -> tensor<256x200xf32>
  return %0 : tensor<256x200xf32>
}

// -----

// gemv (M = 1): K tiles of 32 lanes x block_k = 512 elements, no promotion
// (gemv reads its operands from global memory); A's one row padded to the
// 16-row block tile.
// CHECK-LABEL: gpu.func @matmul_0(
// CHECK:         instruction = gemv
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (1, 1000) step (16, 16)
// CHECK:           } : tensor<?x4096xbf16> to tensor<16x4096xbf16>
// CHECK:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c4096[_0-9]*}} step %{{c512[_0-9]*}}
// CHECK-NOT:         bufferization.
// CHECK:             linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x512xbf16>, tensor<16x512xbf16>)
func.func @gemv(%a: tensor<1x4096xbf16>, %b: tensor<1000x4096xbf16>) -> tensor<1x1000xbf16> {
  %0 = kopt.matmul %a, %b {transpose_b} : tensor<1x4096xbf16>, tensor<1000x4096xbf16> -> tensor<1x1000xbf16>
  return %0 : tensor<1x1000xbf16>
}
