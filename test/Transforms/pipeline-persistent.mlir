// Persistent wgmma grids (schedule persistent = true) in kopt-tile and kopt-pipeline: a grid of
// min(tiles, 132 SMs x blocks per SM) blocks; block b walks tiles b, b + grid, ...
// (outer loop), each tile's K loop split in two (copies of this tile's K tiles
// kt + stages - 1, then of the next tile's first stages - 1), zero accumulators per
// tile, and the epilogue after wgmma.wait_group 0 inside the tile loop.
// (The schedule file also asks for vector_width 2: the default's staged epilogue
// tile does not fit beside four stages in a persistent grid.)
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-persistent.json" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile --kopt-pipeline | FileCheck %s
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-schedule=%S/Inputs/schedule-persistent.json -o /dev/null
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// 4096 x 4096 with 128 x 256 tiles: 512 tiles; 196 KB of shared memory per block,
// so one block per SM: 132 blocks.
// CHECK-LABEL: func.func @prefill(
// CHECK:         kopt.launch @kopt_kernels::@matmul_0 blocks in (%{{c132[_0-9]*}}, %{{c1[_0-9]*}}, %{{c1[_0-9]*}})
// CHECK-SAME:      persistent = true
// CHECK:       gpu.func @matmul_0(
// CHECK:         %[[BID:.*]] = gpu.block_id x
// CHECK:         %[[N:.*]] = arith.divui %{{.*}}, %{{c132[_0-9]*}} : index
// CHECK:         nvgpu.device_async_create_group
// CHECK:         scf.for %[[T:.*]] = %{{c0[_0-9]*}} to %[[N]] step
// CHECK:           scf.for %{{.*}} = %{{c0[_0-9]*}} to %{{c61[_0-9]*}} step
// CHECK:             nvvm.wgmma.mma_async
// CHECK:             nvgpu.device_async_copy
// CHECK:           scf.for %{{.*}} = %{{c61[_0-9]*}} to %{{c64[_0-9]*}} step
// CHECK:             nvvm.wgmma.mma_async
// CHECK:             arith.select
// CHECK:             nvgpu.device_async_copy
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:           vector.store
// CHECK:         gpu.return
// JSON:      "grid": [
// JSON-NEXT:   132,
// JSON:      "persistent": true,
func.func @prefill(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %y = kopt.matmul %x, %w {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}
