// A schedule written on a kernel by hand (not from a schedule file or the
// heuristic) is checked by kopt-select-schedule, the only pass that checks
// schedules, against the workload and the target; each rejection names its
// constraint's id. kopt-tile never sees these kernels.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics --kopt-select-schedule --kopt-lower-to-linalg --kopt-lower-to-gpu --kopt-tile

func.func @f32_on_tensor_cores(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f32,f32->f32/ak,bn/sm_90a: mma_sync needs f16 or bf16 operands of one type (got f32 x f32); f32 matmuls use ffma, or wgmma when kopt.matmul allows tf32 [mma-sync.dtypes]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>):
    %1 = kopt.matmul %x, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    kopt.yield %1 : tensor<64x64xf32>
  }
  return %0 : tensor<64x64xf32>
}

// -----

func.func @cp_async_row_major_b(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f16,f16->f16/ak,bn/sm_90a: copy = cp_async needs both operands contiguous along K; B is stored [K, N] (row-major): use copy = sync [cp-async.operands]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

// kopt-select-schedule leaves kernels without a matmul alone; kopt-lower-to-gpu
// refuses a schedule on one.
func.func @schedule_on_elementwise(%a: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'kopt.kernel' op has a schedule, but only matmul kernels take schedules (its class: elementwise)}}
  %0 = kopt.kernel "relu_0" ins(%a : tensor<64xf32>) -> tensor<64xf32> attributes {schedule = #kopt.schedule<instruction = ffma, copy = sync, block_m = 64, block_n = 64, block_k = 16, warp_m = 32, warp_n = 16, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, source = {attrs = {}, name = "relu", params = ["input", "result"]}} {
  ^bb0(%x: tensor<64xf32>):
    %1 = kopt.relu %x : tensor<64xf32>
    kopt.yield %1 : tensor<64xf32>
  }
  return %0 : tensor<64xf32>
}

// -----

func.func @split_k_beyond_k(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f16,f16->f16/ak,bk/sm_90a: split_k = 4 exceeds the 2 K tiles (ceil(K / block_k) = ceil(64 / 32)): a split would compute nothing [split-k.tiles]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 4, swizzle = 1, vector_width = 1, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

func.func @persistent_mma_sync(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f16,f16->f16/ak,bk/sm_90a: persistent = true is implemented for wgmma with split_k = 1 (got mma_sync, split_k = 1) [persistent]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = true>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

func.func @tma_on_mma_sync(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f16,f16->f16/ak,bk/sm_90a: copy = tma is implemented for wgmma (sm_90a) only, not mma_sync; use cp_async or sync [tma.wgmma-only]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = tma, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 2, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
    kopt.yield %1 : tensor<64x64xf16>
  }
  return %0 : tensor<64x64xf16>
}

// -----

func.func @tma_row_pitch(%a: tensor<64x60xbf16>, %b: tensor<64x60xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x60/bf16,bf16->bf16/ak,bk/sm_90a: TMA needs the operands' row pitch (K elements) to be a multiple of 16 bytes: K (60) must be a multiple of 8 [wgmma.k-pitch]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x60xbf16>, tensor<64x60xbf16>) -> tensor<64x64xbf16> attributes {schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 3, split_k = 1, swizzle = 1, vector_width = 2, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x60xbf16>, %y: tensor<64x60xbf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x60xbf16>, tensor<64x60xbf16> -> tensor<64x64xbf16>
    kopt.yield %1 : tensor<64x64xbf16>
  }
  return %0 : tensor<64x64xbf16>
}

// -----

func.func @tma_row_major_b(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/bf16,bf16->bf16/ak,bn/sm_90a: wgmma (K-major shared-memory tiles filled by tma) needs both operands contiguous along K; B is stored [K, N] (row-major) [wgmma.k-contiguous]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> attributes {schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 3, split_k = 1, swizzle = 1, vector_width = 2, persistent = false>, source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16>):
    %1 = kopt.matmul %x, %y : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
    kopt.yield %1 : tensor<64x64xbf16>
  }
  return %0 : tensor<64x64xbf16>
}

// -----

func.func @warp_specialize_cp_async(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/bf16,bf16->bf16/ak,bk/sm_90a: warp_specialize = true needs wgmma with copy = tma (its producer warp issues TMA copies), not wgmma with copy = cp_async [warp-specialize.tma]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> attributes {schedule = #kopt.schedule<instruction = wgmma, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 64, warp_n = 64, stages = 3, split_k = 1, swizzle = 1, vector_width = 2, persistent = false, warp_specialize = true>, source = {attrs = {transpose_a = false, transpose_b = true}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16>):
    %1 = kopt.matmul %x, %y {transpose_b} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
    kopt.yield %1 : tensor<64x64xbf16>
  }
  return %0 : tensor<64x64xbf16>
}

// -----

// A kernel already marked checked is checked again: kopt-select-schedule
// trusts no mark (only the passes after it do).
func.func @marked_but_invalid(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{'kopt.kernel' op schedule is invalid for matmul/64x64x64/f32,f32->f32/ak,bn/sm_90a: mma_sync needs f16 or bf16 operands of one type (got f32 x f32); f32 matmuls use ffma, or wgmma when kopt.matmul allows tf32 [mma-sync.dtypes]}}
  %0 = kopt.kernel "matmul_0" ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> attributes {schedule = #kopt.schedule<instruction = mma_sync, copy = sync, block_m = 64, block_n = 64, block_k = 32, warp_m = 32, warp_n = 32, stages = 1, split_k = 1, swizzle = 1, vector_width = 1, persistent = false>, schedule_checked_for = "sm_90a", source = {attrs = {transpose_a = false, transpose_b = false}, name = "matmul", params = ["a", "b", "result"]}} {
  ^bb0(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>):
    %1 = kopt.matmul %x, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    kopt.yield %1 : tensor<64x64xf32>
  }
  return %0 : tensor<64x64xf32>
}
