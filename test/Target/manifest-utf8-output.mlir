// An output path that is not valid UTF-8: the manifest names the PTX file, so
// kopt-opt refuses it with a message instead of aborting (issue 15), and writes
// neither file. The helper passes `output=<%t>-<byte 0xff>.ptx` (lit's RUN
// lines cannot spell the byte).
// RUN: rm -rf %t && mkdir -p %t
// RUN: not %python %S/Inputs/run-with-bytes.py %t kopt-opt %s --kopt-to-ptx=output=%t/out-@FF@.ptx -o /dev/null 2>&1 | FileCheck %s
// RUN: %python -c "import os, sys; sys.exit(len(os.listdir(sys.argv[1])))" %t

// CHECK: manifest-utf8-output.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the PTX file's name is not valid UTF-8, and the launch manifest (JSON) names it; choose another output
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = kopt.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}
