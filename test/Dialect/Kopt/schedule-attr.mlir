// #kopt.schedule prints and parses back; sizes must be positive.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect | FileCheck %s
// RUN: kopt-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect | kopt-opt -split-input-file -allow-unregistered-dialect | FileCheck %s

// CHECK: "test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 2, swizzle = 8, vector_width = 8, persistent = true>}
"test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 2, swizzle = 8, vector_width = 8, persistent = true>} : () -> ()

// -----

// warp_specialize is printed only when true (false is its default).
// CHECK: "test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 1, swizzle = 8, vector_width = 8, persistent = false, warp_specialize = true>}
"test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 1, swizzle = 8, vector_width = 8, persistent = false, warp_specialize = true>} : () -> ()

// -----

// CHECK: "test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 1, swizzle = 8, vector_width = 8, persistent = false>}
"test.op"() {s = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 4, split_k = 1, swizzle = 8, vector_width = 8, persistent = false, warp_specialize = false>} : () -> ()

// -----

// expected-error @+1 {{schedule parameter stages must be positive, got 0}}
"test.op"() {s = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 128, block_n = 128, block_k = 32, warp_m = 64, warp_n = 32, stages = 0, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : () -> ()

// -----

// expected-error @+2 {{expected ::kopt::ScheduleInstruction to be one of: ffma, mma_sync, wgmma}}
// expected-error @+1 {{failed to parse Kopt_ScheduleAttr parameter 'instruction'}}
"test.op"() {s = #kopt.schedule<instruction = hmma, copy = cp_async, block_m = 128, block_n = 128, block_k = 32, warp_m = 64, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>} : () -> ()
