// kopt-tile applies the schedule kopt-select-schedule chose and checked (the
// kernel's `schedule`, marked `schedule_checked_for` the chip it was checked
// for); it neither picks a default nor checks a schedule itself. A matmul
// kernel without that mark, or with a mark for another chip, is an error that
// names the missing step.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile | FileCheck %s
// RUN: not kopt-opt %s -split-input-file --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=CHIP
// kopt-select-schedule for one chip, kopt-tile for another:
// RUN: not kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-select-schedule="chip=sm_80" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile 2>&1 | FileCheck %s --check-prefix=OTHERCHIP
// The same chip for both is accepted:
// RUN: kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-select-schedule="chip=sm_80" --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile="chip=sm_80" | FileCheck %s --check-prefix=SAMECHIP
// A tiled form (kopt-tile=tiling-only) whose mark was removed:
// RUN: kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | FileCheck %s --check-prefix=TILED
// RUN: kopt-opt %S/Inputs/f32-matmul.mlir --kopt-fuse --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile=tiling-only | sed -e 's/, schedule_checked_for = "sm_90a"//' | not kopt-opt --kopt-tile 2>&1 | FileCheck %s --check-prefix=UNMARKED

// CHIP: error: kopt-tile: unknown chip 'sm_75'
// OTHERCHIP: error: 'kopt.kernel' op has a schedule checked for sm_80 by kopt-select-schedule, but kopt-tile targets sm_90a: run kopt-select-schedule with chip=sm_90a
// SAMECHIP: kopt.launch @kopt_kernels::@matmul_0
// SAMECHIP-SAME: schedule = #kopt.schedule<instruction = ffma
// TILED: kopt.kernel "matmul_0"
// TILED-SAME: schedule_checked_for = "sm_90a"
// UNMARKED: error: 'kopt.kernel' op has a schedule that kopt-select-schedule has not checked: run kopt-select-schedule before kopt-tile

func.func @no_schedule(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op has no schedule: run kopt-select-schedule before kopt-tile (it chooses and checks each matmul kernel's schedule)}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

// A schedule written by hand and not checked.
func.func @unchecked_schedule(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op has a schedule that kopt-select-schedule has not checked: run kopt-select-schedule before kopt-tile}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 2, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

func.func @checked_for_another_chip(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op has a schedule checked for sm_80 by kopt-select-schedule, but kopt-tile targets sm_90a: run kopt-select-schedule with chip=sm_90a}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 2, persistent = false>, schedule_checked_for = "sm_80", source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

// Marked for kopt-tile's chip: built as the schedule says, which the launch
// records.
// CHECK:       kopt.launch @kopt_kernels::@matmul_0
// CHECK-SAME:    schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2
// CHECK:       gpu.func @matmul_0(
// CHECK:         kopt.mainloop
func.func @checked(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 2, persistent = false>, schedule_checked_for = "sm_90a", source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}
