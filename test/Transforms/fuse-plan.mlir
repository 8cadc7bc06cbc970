// kopt-fuse's plan file (plan=FILE; kopt-to-ptx's fusion-plan=FILE): overrides of
// the default plan. {"split": [NAME, ...]} makes each named fused kernel of the
// default plan one kernel per op under fresh names; the other kernels keep theirs.
// Errors: a name that is no fused kernel of the default plan (listing those there
// are), an unknown key, a split that is not a list of names, a file that is not
// JSON, a missing file.
// RUN: kopt-opt %s --kopt-fuse | FileCheck %s --check-prefix=DEFAULT
// RUN: kopt-opt %s --kopt-fuse="plan=%S/Inputs/fusion-plan-split.json" | FileCheck %s --check-prefix=SPLIT
// RUN: kopt-opt %s --kopt-to-ptx="fusion-plan=%S/Inputs/fusion-plan-split.json output=%t.ptx" -o /dev/null
// RUN: %python -c "import json; m = json.load(open('%t.json')); print(' '.join(k['name'] for k in m['kernels']))" | FileCheck %s --check-prefix=MANIFEST
// RUN: not kopt-opt %s --kopt-fuse="plan=%S/Inputs/fusion-plan-unknown-kernel.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kopt-opt %s --kopt-fuse="plan=%S/Inputs/fusion-plan-unknown-key.json" 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not kopt-opt %s --kopt-fuse="plan=%S/Inputs/fusion-plan-not-list.json" 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: not kopt-opt %s --kopt-fuse="plan=%S/Inputs/fusion-plan-not-json.json" 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not kopt-opt %s --kopt-fuse="plan=%S/Inputs/does-not-exist.json" 2>&1 | FileCheck %s --check-prefix=MISSING

// DEFAULT:     kopt.kernel "matmul_add_gelu_0"
// DEFAULT:     kopt.kernel "add_relu_0"
// SPLIT:       kopt.kernel "matmul_0"
// SPLIT:       kopt.kernel "add_0"
// SPLIT:       kopt.kernel "gelu_0"
// SPLIT:       kopt.kernel "add_relu_0"
// SPLIT-NOT:   kopt.kernel
// MANIFEST:    matmul_0 add_0 gelu_0 add_relu_0
// UNKNOWN:     error: kopt-fuse: the plan file '{{.*}}fusion-plan-unknown-kernel.json' splits 'no_such_kernel', which is not a fused kernel of the default plan (its fused kernels: matmul_add_gelu_0, add_relu_0)
// KEY:         error: kopt-fuse: the plan file '{{.*}}' has an unknown key 'keep' (known: "split", a list of kernel names)
// LIST:        error: kopt-fuse: the plan file '{{.*}}': "split" must be a list of kernel names
// JSON:        error: kopt-fuse: the plan file '{{.*}}' is not valid JSON
// MISSING:     error: kopt-fuse: cannot read the plan file '{{.*}}does-not-exist.json'
func.func @mlp(%x: tensor<64x256xf16>, %w: tensor<128x256xf16>, %b: tensor<128xf16>, %y: tensor<64x128xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>) {
  %m = kopt.matmul %x, %w {transpose_b} : tensor<64x256xf16>, tensor<128x256xf16> -> tensor<64x128xf16>
  %a = kopt.add %m, %b : tensor<64x128xf16>, tensor<128xf16> -> tensor<64x128xf16>
  %g = kopt.gelu %a : tensor<64x128xf16>
  %s = kopt.add %y, %b : tensor<64x128xf16>, tensor<128xf16> -> tensor<64x128xf16>
  %r = kopt.relu %s : tensor<64x128xf16>
  return %g, %r : tensor<64x128xf16>, tensor<64x128xf16>
}
