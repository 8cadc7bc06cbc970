// kopt-select-schedule on a large schedule file full of bad entries: it reports
// the first 20 errors, then how many more there were, and cuts the keys and
// values it echoes after 80 bytes (a 100 MB file once printed 1.8M lines).

// 100000 entries (3 MB) that name no kernel: 20 errors and a count, 21 lines.
// RUN: %python -c "import json; print(json.dumps({'nokernel_%%d' %% i: {'stages': 3} for i in range(100000)}))" > %t.many.json
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%t.many.json" -o /dev/null 2> %t.many.err
// RUN: FileCheck %s --check-prefix=MANY < %t.many.err
// RUN: count 21 < %t.many.err
// A key of 1 MB and a value of 100 kB are cut when echoed.
// RUN: %python -c "print('{\"' + 'k' * 1000000 + '\": {\"stages\": 3}}')" > %t.longkey.json
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%t.longkey.json" -o /dev/null 2> %t.longkey.err
// RUN: FileCheck %s --check-prefix=LONGKEY < %t.longkey.err
// RUN: count 1 < %t.longkey.err
// RUN: %python -c "print('{\"*\": {\"block_m\": \"' + 'v' * 100000 + '\"}}')" > %t.longvalue.json
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%t.longvalue.json" -o /dev/null 2> %t.longvalue.err
// RUN: FileCheck %s --check-prefix=LONGVALUE < %t.longvalue.err
// RUN: %python -c "print('{\"' + 'p' * 1000 + '\": 1}')" > %t.longparam.json
// RUN: not kopt-opt %s --kopt-fuse --kopt-select-schedule="schedule=%t.longparam.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LONGPARAM

func.func @mm(%x: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}

// MANY-COUNT-20: error: the schedule file '{{.*}}' has an entry 'nokernel_{{[0-9]+}}' that names no matmul kernel of the module
// MANY-NEXT:     error: ... and 99980 more errors (kopt-select-schedule reports the first 20)
// MANY-NOT:      error

// LONGKEY: error: the schedule file '{{.*}}' has an entry '{{k{80}\.\.\. }}(1000000 bytes)' that names no matmul kernel
// LONGVALUE: error: 'kopt.kernel' op cannot use entry '*' of '{{.*}}': 'block_m' must be an integer from 1 to 2^20, got {{"v{79}\.\.\. }}(100002 bytes)
// LONGPARAM: error: the schedule file '{{.*}}': '{{p{80}\.\.\. }}(1000 bytes)' is not a schedule parameter
