// kopt-run reads the manifest of fused kernels (its reader runs the manifest
// library's validator, then lists the kernels, before it opens a driver).
// REQUIRES: kopt-run
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %S/manifest-fused.mlir --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: not kopt-run %t.json --kernel none 2>&1 | FileCheck %s

// CHECK: kopt-run: error: no kernel named 'none' in {{.*}} (kernels: div_tanh_mul_0, add_mul_sigmoid_sub_0)
