// A module whose kopt ops compute nothing that is returned has no kernel to
// write: an error that says why, and no output file.
// RUN: rm -f %t.ptx %t.json
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null 2>&1 | FileCheck %s
// RUN: not test -e %t.ptx
// CHECK: error: nothing to compile: no function of the module computes a result with kopt ops (kopt ops whose results are not returned are dropped)
func.func @dead(%x: tensor<4xf32>) {
  %0 = kopt.exp %x : tensor<4xf32>
  return
}
