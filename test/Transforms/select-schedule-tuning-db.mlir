// kopt-select-schedule with a tuning database (docs/tuning.md): a kernel takes
// its workload's best usable GPU record of this kopt version; estimates (model),
// wrong results and other versions' records are never chosen; a record that
// this version's constraints reject falls back to the heuristic with a warning;
// a remark per kernel says where its schedule came from.

// REQUIRES: kopt-tune
// RUN: rm -f %t.db && kopt-tune --db=%t.db --import=%S/Inputs/tuning-db-records.jsonl 2>&1 | FileCheck %s --check-prefix=IMPORT
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="tuning-db=%t.db" 2>&1 | FileCheck %s
// A schedule file entry still applies on top of the database's.
// RUN: kopt-opt %s --kopt-fuse --kopt-select-schedule="tuning-db=%t.db schedule=%S/Inputs/schedule-by-name-tuning.json" 2>&1 | FileCheck %s --check-prefix=FILE
// The kopt-opt shorthand reaches the pipeline; the manifest carries the schedule.
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" --kopt-tuning-db=%t.db -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: %python -c "import json; m = json.load(open('%t.json')); print([k['schedule']['block_m'] for k in m['kernels']])" | FileCheck %s --check-prefix=MANIFEST
// RUN: %ptxas -arch=sm_90a %t.ptx -o /dev/null
// Without the pipeline the shorthand is refused.
// RUN: not kopt-opt %s --kopt-fuse --kopt-tuning-db=%t.db 2>&1 | FileCheck %s --check-prefix=NOPIPE
// Databases that cannot be used are errors naming the file.
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="tuning-db=%t.missing.db" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: %python -c "open('%t.garbage', 'wb').write(bytes(range(256)) * 64)"
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="tuning-db=%t.garbage" 2>&1 | FileCheck %s --check-prefix=GARBAGE

// IMPORT: imported 7 trials

// CHECK: remark: schedule of matmul/256x256x256/bf16,bf16->bf16/ak,bk/sm_90a from the tuning database '{{.*}}.db' (trial 2, 0.0100 ms on NVIDIA H200)
// CHECK: remark: schedule of matmul/512x256x256/bf16,bf16->bf16/ak,bk/sm_90a from the default heuristic (the tuning database '{{.*}}' has no usable GPU record of it from kopt {{[0-9.]+}}; 1 records of other kopt versions are ignored)
// CHECK: warning: tuning database '{{.*}}': trial 7 of matmul/128x256x256/bf16,bf16->bf16/ak,bk/sm_90a is invalid for this kopt: {{.*}}[wgmma.warp-tile]; using the default heuristic
// CHECK: remark: schedule of matmul/128x256x256/bf16,bf16->bf16/ak,bk/sm_90a from the default heuristic (trial 7 of the tuning database '{{.*}}' is invalid)
// CHECK: kopt.kernel "matmul_0"
// CHECK-SAME: schedule = #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 128, block_n = 64, block_k = 32, warp_m = 64, warp_n = 32, stages = 3,
// CHECK: kopt.kernel "matmul_1"
// CHECK-SAME: schedule = #kopt.schedule<instruction = wgmma,
// CHECK: kopt.kernel "matmul_2"
// CHECK-SAME: schedule = #kopt.schedule<instruction = wgmma,

// FILE: remark: schedule of matmul/256x256x256/{{.*}} from entry 'matmul_0' of the schedule file
// FILE: kopt.kernel "matmul_0"
// FILE-SAME: block_m = 128, block_n = 64, block_k = 32, warp_m = 64, warp_n = 32, stages = 4,

// PIPE: remark: schedule of matmul/256x256x256/bf16,bf16->bf16/ak,bk/sm_90a from the tuning database
// MANIFEST: [128, 64, 64]

// NOPIPE: error: --kopt-schedule, --kopt-tuning-db and --kopt-print-space apply to the --kopt-to-ptx pipeline

// MISSING: error: kopt-select-schedule: {{.*}}missing.db: no such tuning database
// GARBAGE: error: kopt-select-schedule: {{.*}}garbage: {{.*}}

func.func @f(%x: tensor<256x256xbf16>, %w: tensor<256x256xbf16>, %y: tensor<512x256xbf16>, %z: tensor<128x256xbf16>) -> (tensor<256x256xbf16>, tensor<512x256xbf16>, tensor<128x256xbf16>) {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  %1 = kopt.matmul %y, %w {transpose_b} : tensor<512x256xbf16>, tensor<256x256xbf16> -> tensor<512x256xbf16>
  %2 = kopt.matmul %z, %w {transpose_b} : tensor<128x256xbf16>, tensor<256x256xbf16> -> tensor<128x256xbf16>
  return %0, %1, %2 : tensor<256x256xbf16>, tensor<512x256xbf16>, tensor<128x256xbf16>
}
