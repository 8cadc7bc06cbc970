// libdevice (exp, tanh, erf, rsqrt, sqrt) is linked whatever the environment: the
// pipeline passes the CUDA toolkit to gpu-module-to-binary (cuda-path option, else
// $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH, else /usr/local/cuda). A toolkit that does not
// exist or holds no libdevice is an error (kopt-check-target), never PTX with
// unresolved calls.
//
// RUN: env -u CUDA_ROOT -u CUDA_HOME -u CUDA_PATH kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.bad.ptx cuda-path=%t.no-cuda" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCUDA
// RUN: not ls %t.bad.ptx
// A folder that exists but holds no libdevice: rejected before compiling.
// RUN: rm -rf %t.empty-cuda && mkdir -p %t.empty-cuda
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.bad2.ptx cuda-path=%t.empty-cuda" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOLIBDEVICE
// RUN: not ls %t.bad2.ptx

// CHECK-NOT: .extern .func
// CHECK:     .visible .entry exp_0(
// CHECK-NOT: call
// NOCUDA: error: CUDA toolkit folder '{{.*}}.no-cuda' does not exist or is not a folder; set CUDA_HOME or cuda-path
// NOLIBDEVICE: error: no libdevice at '{{.*}}.empty-cuda/nvvm/libdevice/libdevice.10.bc': is '{{.*}}.empty-cuda' a CUDA toolkit?
func.func @f(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = kopt.exp %x : tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
