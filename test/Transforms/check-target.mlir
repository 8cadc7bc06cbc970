// kopt-check-target: the kopt-to-ptx options are checked before anything is
// compiled; each bad one is an error naming it (never a crash, a fatal LLVM error
// or PTX that ptxas refuses).
// RUN: kopt-opt %s --kopt-check-target -o /dev/null
// RUN: kopt-opt %s --kopt-check-target="chip=sm_80 features=+ptx88 O=0" -o /dev/null
// RUN: not kopt-opt %s --kopt-check-target="chip=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTYCHIP
// RUN: not kopt-opt %s --kopt-check-target="chip=sm_100a" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not kopt-opt %s --kopt-check-target="chip=sm_75" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OLDCHIP
// RUN: not kopt-opt %s --kopt-check-target="features=+ptx60" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not kopt-opt %s --kopt-check-target="features=garbage" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GARBAGE
// RUN: not kopt-opt %s --kopt-check-target="O=9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not kopt-opt %s --kopt-check-target="cuda-path=%t.none" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CUDA
// The whole pipeline stops at the same errors.
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.ptx chip=sm_999" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: not ls %t.ptx

// EMPTYCHIP: error: unsupported chip '': kopt generates code for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a
// CHIP: error: unsupported chip 'sm_100a'
// OLDCHIP: error: unsupported chip 'sm_75'
// PTX: error: unsupported features '+ptx60': expected +ptxNN with NN from 80 (PTX ISA 8.0, the oldest kopt emits) to 88
// GARBAGE: error: unsupported features 'garbage'
// OPT: error: unsupported optimization level O=9: expected 0 to 3
// CUDA: error: CUDA toolkit folder '{{.*}}.none' does not exist or is not a folder; set CUDA_HOME or cuda-path
// PIPE: error: unsupported chip 'sm_999'
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kopt.exp %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}
