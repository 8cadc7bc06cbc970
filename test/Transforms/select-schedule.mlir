// kopt-select-schedule: which #kopt.schedule each matmul kernel gets (default
// heuristic, a schedule file by kernel name / workload key / "*", a bare schedule
// object) and the errors for files and schedules it cannot use.

// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule | FileCheck %s --check-prefix=DEFAULT
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-partial.json" | FileCheck %s --check-prefix=PARTIAL
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-by-name.json" | FileCheck %s --check-prefix=BYNAME
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-by-key.json" | FileCheck %s --check-prefix=BYKEY
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-ffma.json" | FileCheck %s --check-prefix=FFMA
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="print-space" -o /dev/null | FileCheck %s --check-prefix=SPACE
// The kopt-opt shorthands reach the kopt-to-ptx pipeline.
// RUN: kopt-opt %s --kopt-to-ptx --kopt-schedule=%S/Inputs/schedule-partial.json --kopt-print-space -o /dev/null | FileCheck %s --check-prefix=SHORT

// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/does-not-exist.json" 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-not-json.json" 2>&1 | FileCheck %s --check-prefix=NOTJSON
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-duplicate-key.json" 2>&1 | FileCheck %s --check-prefix=DUPKEY
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-unknown-key.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-bad-type.json" 2>&1 | FileCheck %s --check-prefix=BADTYPE
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-mixed.json" 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-no-kernel.json" 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-not-matmul.json" 2>&1 | FileCheck %s --check-prefix=NOTMATMUL
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-too-much-smem.json" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-wgmma.json" 2>&1 | FileCheck %s --check-prefix=WGMMA
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-num-warps.json" 2>&1 | FileCheck %s --check-prefix=NUMWARPS
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%S/Inputs/schedule-entry-null.json" 2>&1 | FileCheck %s --check-prefix=ENTRYNULL
// kopt-opt's shorthands need the pipeline, and must not contradict its option.
// RUN: not kopt-opt %s --kopt-fuse --kopt-schedule=%S/Inputs/schedule-partial.json 2>&1 | FileCheck %s --check-prefix=NOPIPE
// RUN: not kopt-opt %s --kopt-to-ptx="schedule=%S/Inputs/schedule-partial.json" --kopt-schedule=%S/Inputs/schedule-ffma.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWOFILES
// A 100000-deep JSON file is an error, not a crash.
// RUN: %python -c "print('{\"a\":' * 100000 + '1' + '}' * 100000)" > %t.deep.json
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%t.deep.json" 2>&1 | FileCheck %s --check-prefix=DEEP
// On sm_86 (99 KB of shared memory per block) a schedule that fits sm_90a does not.
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="chip=sm_86 schedule=%S/Inputs/schedule-too-much-smem.json" 2>&1 | FileCheck %s --check-prefix=SM86

// Prefill (M = 4096) and decode (M = 16) matmuls, and an elementwise op that
// takes no schedule.
func.func @mlp(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>, %t: tensor<16x4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<16x4096xbf16>, tensor<16x4096xbf16>) {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %1 = kopt.matmul %t, %w {transpose_b} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %2 = kopt.silu %t : tensor<16x4096xbf16>
  return %0, %1, %2 : tensor<4096x4096xbf16>, tensor<16x4096xbf16>, tensor<16x4096xbf16>
}

// The heuristic: prefill 128 x 256 wgmma tiles of two warpgroups, on 512 tiles a
// persistent grid with a TMA producer warp and three stages; decode (M = 16,
// N = 4096) 64 x 32 tiles of one warpgroup, K step 128, four TMA stages with a
// producer warp, K split in 2 (128 tiles, 32 K steps).
// DEFAULT:      kopt.kernel "matmul_0"
// DEFAULT-SAME:   schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 128, block_n = 256, block_k = 64, warp_m = 64, warp_n = 256, stages = 3, split_k = 1, swizzle = 8, vector_width = 8, persistent = true, warp_specialize = true>
// The pass marks the schedule it checked, for its chip (kopt-tile requires it).
// DEFAULT-SAME:   schedule_checked_for = "sm_90a"
// DEFAULT:      kopt.kernel "matmul_1"
// DEFAULT-SAME:   schedule = #kopt.schedule<instruction = wgmma, copy = tma, block_m = 64, block_n = 32, block_k = 128, warp_m = 64, warp_n = 32, stages = 4, split_k = 2, swizzle = 1, vector_width = 8, persistent = false, warp_specialize = true>
// DEFAULT:      kopt.kernel "silu_0"
// DEFAULT-NOT:    schedule
// DEFAULT:      kopt.yield

// A partial schedule adjusts the default: the other parameters keep its values.
// PARTIAL:      kopt.kernel "matmul_0"
// PARTIAL-SAME:   schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 64, block_n = 64, block_k = 64, warp_m = 32, warp_n = 32, stages = 3, split_k = 1, swizzle = 4, vector_width = 2, persistent = false>
// PARTIAL:      kopt.kernel "matmul_1"
// PARTIAL-SAME:   block_m = 64, block_n = 64, block_k = {{[0-9]+}}, warp_m = 32, warp_n = 32, stages = 3,

// matmul_1 by name (and "*" does not apply to it); matmul_0 through "*".
// BYNAME:       kopt.kernel "matmul_0"
// BYNAME-SAME:    instruction = wgmma, {{.*}} stages = 3,
// BYNAME:       kopt.kernel "matmul_1"
// BYNAME-SAME:    instruction = mma_sync, {{.*}} block_m = 64, block_n = 128, block_k = {{[0-9]+}}, warp_m = 32, warp_n = 64, stages = 4,

// BYKEY:        kopt.kernel "matmul_1"
// BYKEY-SAME:     block_m = 16, block_n = 64, block_k = 64, warp_m = 16, warp_n = 16,

// FFMA:         kopt.kernel "matmul_0"
// FFMA-SAME:      schedule = #kopt.schedule<instruction = ffma, copy = sync, block_m = 32, block_n = 64, block_k = 8, warp_m = 16, warp_n = 32, stages = 1,

// SPACE:        "class": "matmul",
// SPACE:        "constraints": [
// SPACE-NEXT:     {
// SPACE-NEXT:       "id": "tma.wgmma-only",
// SPACE-NEXT:       "rule": "copy = tma: instruction = wgmma (sm_90a)"
// SPACE:            "id": "mma-sync.shared",
// SPACE:        "default": {
// SPACE:        "domains": {
// SPACE:        "kernel": "matmul_0",
// SPACE:        "selected": {
// SPACE:        "valid_points": {{[1-9][0-9]*}},
// SPACE:        "workload": {
// SPACE:          "key": "matmul/4096x4096x4096/bf16,bf16->bf16/ak,bk/sm_90a",
// SPACE:        "kernel": "matmul_1",

// SHORT:        "kernel": "matmul_0",
// SHORT:        "selected": {
// SHORT:          "block_m": 64,

// NOFILE:   error: cannot read the schedule file '{{.*}}does-not-exist.json'
// NOTJSON:  error: the schedule file '{{.*}}schedule-not-json.json' is not valid JSON: [json.exception.parse_error.101] parse error at line 2, column 1: syntax error
// DUPKEY:   error: the schedule file '{{.*}}schedule-duplicate-key.json' is not valid JSON: the key 'block_m' appears twice in one object
// UNKNOWN:  error: 'kopt.kernel' op cannot use the schedule of '{{.*}}schedule-unknown-key.json': unknown schedule parameter 'tiles'
// BADTYPE:  error: 'kopt.kernel' op cannot use the schedule of '{{.*}}': 'block_m' must be an integer from 1 to 2^20, got "128"
// MIXED:    error: the schedule file '{{.*}}' mixes schedule parameters with kernel entries
// NOKERNEL: error: the schedule file '{{.*}}' has an entry 'matmul_7' that names no matmul kernel of the module
// NOKERNEL-SAME: kopt-fuse names a kernel after its ops, so a fused epilogue changes a name, not a key); the module's matmul kernels: matmul_0, matmul_1
// NOTMATMUL: error: 'kopt.kernel' op is named in the schedule file '{{.*}}' but computes no matmul
// SMEM:     error: 'kopt.kernel' op schedule is invalid for matmul/4096x4096x4096/bf16,bf16->bf16/ak,bk/sm_90a: 5 stages of 256x64 and 128x64 tiles need 276480 bytes of shared memory; sm_90a allows 232448 per block [mma-sync.shared]
// WGMMA:    error: 'kopt.kernel' op schedule is invalid for {{.*}}: wgmma reads 128-byte swizzled rows of 64 bf16 elements: block_k must be 64 or 128, got 32 [wgmma.block-k]
// NUMWARPS: error: 'kopt.kernel' op cannot use the schedule of '{{.*}}': 'num_warps' (4) disagrees with the warp grid (block_m / warp_m) * (block_n / warp_n) = 8
// CHIP:     error: kopt-select-schedule: unknown chip 'sm_75'
// ENTRYNULL: error: the schedule file '{{.*}}schedule-entry-null.json': 'matmul_0' is not a schedule parameter, and as a kernel entry its value must be a schedule object, got null
// NOPIPE:   kopt-opt: error: --kopt-schedule, --kopt-tuning-db and --kopt-print-space apply to the --kopt-to-ptx pipeline
// TWOFILES: kopt-opt: error: --kopt-schedule={{.*}}schedule-ffma.json and --kopt-to-ptx="schedule={{.*}}schedule-partial.json" name different schedule files
// DEEP:     error: the schedule file '{{.*}}' has an entry 'a' that names no matmul kernel
// SM86:     error: 'kopt.kernel' op schedule is invalid for {{.*}}/sm_86: {{.*}} sm_86 allows 101376 per block
