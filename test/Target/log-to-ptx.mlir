// kopt.log and kopt.log1p through --kopt-to-ptx: libdevice's __nv_logf and
// __nv_log1pf are linked and inlined (no call, no .extern function left), in f32
// also for f16 and bf16 tensors (extended, computed, rounded once), as
// elementwise kernels and as a row kernel's prologue and epilogue; the manifest
// names the ops; ptxas assembles the PTX for sm_90a.
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=NOCALL < %t.ptx
// RUN: %python %S/Inputs/manifest-summary.py %t.json %t.ptx | FileCheck %s --check-prefix=SUMMARY
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// NOCALL-NOT: .extern
// NOCALL-NOT: call
// NOCALL-NOT: __nv_

// __nv_logf: the mantissa's polynomial plus the exponent times ln 2 (0f3F317218),
// -inf (0fFF800000) at 0.
// PTX-LABEL: .visible .entry log_0(
// PTX:         fma.rn.f32 {{.*}}, 0f3F317218,
// PTX:         selp.f32 {{.*}}, 0fFF800000,
// PTX:         st.global
// __nv_log1pf: 1 + x rounded toward zero (add.rz) for the exponent, the
// polynomial on the exact remainder (not log(1 + x) rounded first).
// PTX-LABEL: .visible .entry log1p_0(
// PTX-NOT:     .entry
// PTX:         add.rz.f32
// PTX:         fma.rn.f32 {{.*}}, 0f3F317218,
// PTX:         st.global
// f16 in f32: extended, log, rounded once.
// PTX-LABEL: .visible .entry log_1(
// PTX:         cvt.f32.f16
// PTX:         fma.rn.f32 {{.*}}, 0f3F317218,
// PTX:         cvt.rn.f16{{(x2)?}}.f32
// bf16 rows: log before the softmax, log1p after it, in one row kernel.
// PTX-LABEL: .visible .entry log_softmax_log1p_0(
// PTX:         cvt.f32.bf16
// PTX:         fma.rn.f32 {{.*}}, 0f3F317218,
// PTX:         shfl.sync.bfly.b32
// PTX:         ex2.approx.ftz.f32
// PTX:         add.rz.f32
// PTX:         cvt.rn.bf16{{(x2)?}}.f32
// PTX-NOT:   .entry

// SUMMARY:      kernel log_0 class=elementwise
// SUMMARY-NEXT:   op log attrs={} input=input -> result
// SUMMARY:      kernel log1p_0 class=elementwise
// SUMMARY-NEXT:   op log1p attrs={} input=input -> result
// SUMMARY:      kernel log_1 class=elementwise
// SUMMARY-NEXT:   op log attrs={} input=input -> result
// SUMMARY-NEXT:   param input input f16 [8,512]
// SUMMARY:      kernel log_softmax_log1p_0 class=row
// SUMMARY-NEXT:   op log attrs={} input=in0 -> t0
// SUMMARY-NEXT:   op softmax attrs={} input=t0 -> t1
// SUMMARY-NEXT:   op log1p attrs={} input=t1 -> out0
// SUMMARY:      consistent
func.func @f(%x: tensor<1024xf32>, %h: tensor<8x512xf16>, %b: tensor<4x512xbf16>)
    -> (tensor<1024xf32>, tensor<1024xf32>, tensor<8x512xf16>, tensor<4x512xbf16>) {
  %0 = kopt.log %x : tensor<1024xf32>
  %1 = kopt.log1p %x : tensor<1024xf32>
  %2 = kopt.log %h : tensor<8x512xf16>
  %l = kopt.log %b : tensor<4x512xbf16>
  %s = kopt.softmax %l : tensor<4x512xbf16>
  %3 = kopt.log1p %s : tensor<4x512xbf16>
  return %0, %1, %2, %3 : tensor<1024xf32>, tensor<1024xf32>, tensor<8x512xf16>, tensor<4x512xbf16>
}
