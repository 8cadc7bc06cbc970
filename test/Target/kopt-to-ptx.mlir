// The --kopt-to-ptx pipeline: PTX for every kernel, the launch manifest beside it
// (docs/manifest.md), PTX that ptxas accepts for sm_90a.
// RUN: rm -f %t.ptx %t.json
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.ptx" -o %t.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: %python %S/Inputs/manifest-summary.py %t.json %t.ptx | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=MLIR < %t.mlir
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
//
// Another chip: the PTX target and the manifest follow it.
// RUN: kopt-opt %s --kopt-to-ptx="output=%t.sm90.ptx chip=sm_90" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM90 < %t.sm90.ptx
// RUN: FileCheck %s --check-prefix=SM90JSON < %t.sm90.json
// RUN: %ptxas -arch=sm_90 %t.sm90.ptx -o %t.sm90.cubin
//
// Without output= the pipeline writes no file: it only prints the module, whose
// gpu.binary holds the PTX.
// RUN: kopt-opt %s --kopt-to-ptx | FileCheck %s --check-prefix=NOOUTPUT
//
// Errors: kopt-emit-ptx run alone without output=; an output file that cannot be
// written; an output ending in .json (the manifest's own name); a module without
// gpu.binary.
// RUN: not kopt-opt %s --kopt-emit-ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.no-such-dir/out.ptx" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// RUN: not kopt-opt %s --kopt-to-ptx="output=%t.out.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSONEXT
// The output is never the input file: copy the input, try to compile it onto itself.
// RUN: cp %s %t.self.mlir
// RUN: not kopt-opt %t.self.mlir --kopt-to-ptx="output=%t.self.mlir" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SELF
// RUN: diff %s %t.self.mlir
// Nor is the manifest: an input X.json compiled with output=X.ptx (the input as
// it stands and through a symbolic link), and no PTX is written either.
// RUN: rm -f %t.in.ptx %t.link.ptx %t.link.json && cp %s %t.in.json
// RUN: not kopt-opt %t.in.json --kopt-to-ptx="output=%t.in.ptx" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SELFJSON
// RUN: diff %s %t.in.json
// RUN: ln -s %t.in.json %t.link.json
// RUN: not kopt-opt %t.in.json --kopt-to-ptx="output=%t.link.ptx" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SELFJSON
// RUN: diff %s %t.in.json
// RUN: not ls %t.in.ptx %t.link.ptx
// RUN: not kopt-opt %s --kopt-emit-ptx="output=%t.nobinary.ptx" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOBINARY
// A failure leaves no file behind.
// RUN: not ls %t.out.json %t.nobinary.ptx %t.nobinary.json

// A Llama-style decode step (16 tokens, a 1024-wide slice of the MLP): rmsnorm,
// matmul with a Linear weight, silu (the matmul's fused epilogue), row max; and a
// second function (GPT-2 MLP gelu).
func.func @decode_mlp(%x: tensor<16x4096xbf16>, %w: tensor<4096xbf16>, %wg: tensor<1024x4096xbf16>)
    -> (tensor<16x1024xbf16>, tensor<16xf32>) {
  %n = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
  %g = kopt.matmul %n, %wg {transpose_b} : tensor<16x4096xbf16>, tensor<1024x4096xbf16> -> tensor<16x1024xbf16>
  %s = kopt.silu %g : tensor<16x1024xbf16>
  %m = kopt.reduce max %s : tensor<16x1024xbf16> -> tensor<16xf32>
  return %s, %m : tensor<16x1024xbf16>, tensor<16xf32>
}

func.func @gelu_tanh(%x: tensor<8x6400xf16>) -> tensor<8x6400xf16> {
  %0 = kopt.gelu %x approximate(tanh) : tensor<8x6400xf16>
  return %0 : tensor<8x6400xf16>
}

// The PTX has one .entry per kernel, one .u64 pointer per buffer (bare pointers), the
// block size as .maxntid, warp shuffles and barriers in the row kernels (a float per
// warp of the row in shared memory: 16 of a 512-thread row), shared
// memory for row and matmul kernels.
// PTX:       .version 8.0
// PTX-NEXT:  .target sm_90a
// PTX-NEXT:  .address_size 64
// The dynamic shared memory array of the matmul kernels.
// PTX:       .extern .shared .align 1024 .b8 kopt_dynamic_smem[];
// PTX-LABEL: .visible .entry rmsnorm_0(
// PTX-NEXT:    .param .u64 .ptr .align 1 rmsnorm_0_param_0,
// PTX-NEXT:    .param .u64 .ptr .align 1 rmsnorm_0_param_1,
// PTX-NEXT:    .param .u64 .ptr .align 1 rmsnorm_0_param_2
// PTX-NEXT:  )
// PTX-NEXT:  .maxntid 512, 1, 1
// PTX:         .shared .align 4 .b8 __wg_rmsnorm_0_0[64];
// PTX:         shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// PTX:         bar.sync 0;
// PTX:         rsqrt.approx
// PTX-LABEL: .visible .entry matmul_silu_0(
// PTX-NEXT:    .param .u64 .ptr .align 1 matmul_silu_0_param_0,
// PTX-NEXT:    .param .u64 .ptr .align 1 matmul_silu_0_param_1,
// PTX-NEXT:    .param .u64 .ptr .align 1 matmul_silu_0_param_2,
// PTX-NEXT:    .param .u64 .ptr .align 1 matmul_silu_0_param_3,
// PTX-NEXT:    .param .u64 matmul_silu_0_param_4,
// PTX-NEXT:    .param .u64 matmul_silu_0_param_5
// PTX-NEXT:  )
// The default schedule of a decode GEMM (M = 16 <= 64, N = 1024) on sm_90a: 32
// tiles of 64 x 32 are few, so K is split in 4 over 64 x 16 tiles (the workspace
// is param_3, the tensor maps param_4 and 5); one warpgroup per tile, K step 128,
// four stages of two 128-byte swizzled [64][64] (A) and [16][64] (B) bf16
// sub-tiles that a producer warp fills through TMA (A's boxes of 16 rows; 81920
// bytes of the module's dynamic shared memory and 64 of mbarriers, passed at
// launch: see the manifest), wgmma m64n16k16.
// PTX-NEXT:  .maxntid 160, 1, 1
// PTX:         mbarrier.init.shared.b64
// PTX:         shfl.sync.idx.b32
// PTX:         cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX:         mbarrier.try_wait.parity.shared.b64
// PTX:         wgmma.fence.sync.aligned;
// PTX:         wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// PTX:         wgmma.wait_group.sync.aligned 1;
// The epilogue: silu of each rounded element (libdevice's exp), then stored.
// PTX:         ex2.approx
// PTX:         cvt.rn.bf16x2.f32
// PTX-LABEL: .visible .entry reduce_0(
// PTX:       .maxntid 128, 1, 1
// PTX:         shfl.sync.bfly.b32
// PTX-LABEL: .visible .entry gelu_0(
// PTX-NEXT:    .param .u64 .ptr .align 1 gelu_0_param_0,
// PTX-NEXT:    .param .u64 .ptr .align 1 gelu_0_param_1
// PTX-NEXT:  )
// PTX-NEXT:  .maxntid 256, 1, 1
// PTX:         cvt.rn.f16{{(x2)?}}.f32
// PTX-NOT:   .entry

// The manifest as written: the header and the first kernel, field by field.
// JSON:      {
// JSON-NEXT:   "kopt_manifest_version": 2,
// JSON-NEXT:   "chip": "sm_90a",
// JSON-NEXT:   "ptx": "{{[^"/]*}}.ptx",
// JSON-NEXT:   "kernels": [
// JSON-NEXT:     {
// JSON-NEXT:       "name": "rmsnorm_0",
// JSON-NEXT:       "class": "row",
// JSON-NEXT:       "ops": [
// JSON-NEXT:         {
// JSON-NEXT:           "op": "rmsnorm",
// JSON-NEXT:           "attrs": {
// JSON-NEXT:             "eps": 9.99999974{{[0-9]*}}e-06
// JSON-NEXT:           },
// JSON-NEXT:           "operands": {
// JSON-NEXT:             "input": "input",
// JSON-NEXT:             "weight": "weight"
// JSON-NEXT:           },
// JSON-NEXT:           "result": "result"
// JSON-NEXT:         }
// JSON-NEXT:       ],
// JSON-NEXT:       "params": [
// JSON-NEXT:         {
// JSON-NEXT:           "name": "input",
// JSON-NEXT:           "role": "input",
// JSON-NEXT:           "dtype": "bf16",
// JSON-NEXT:           "shape": [
// JSON-NEXT:             16,
// JSON-NEXT:             4096
// JSON-NEXT:           ]
// JSON-NEXT:         },
// JSON-NEXT:         {
// JSON-NEXT:           "name": "weight",
// JSON-NEXT:           "role": "input",
// JSON-NEXT:           "dtype": "bf16",
// JSON-NEXT:           "shape": [
// JSON-NEXT:             4096
// JSON-NEXT:           ]
// JSON-NEXT:         },
// JSON-NEXT:         {
// JSON-NEXT:           "name": "result",
// JSON-NEXT:           "role": "output",
// JSON-NEXT:           "dtype": "bf16",
// JSON-NEXT:           "shape": [
// JSON-NEXT:             16,
// JSON-NEXT:             4096
// JSON-NEXT:           ]
// JSON-NEXT:         }
// JSON-NEXT:       ],
// JSON-NEXT:       "grid": [
// JSON-NEXT:         16,
// JSON-NEXT:         1,
// JSON-NEXT:         1
// JSON-NEXT:       ],
// JSON-NEXT:       "block": [
// JSON-NEXT:         512,
// JSON-NEXT:         1,
// JSON-NEXT:         1
// JSON-NEXT:       ],
// JSON-NEXT:       "dynamic_shared_bytes": 0
// JSON-NEXT:     },
// JSON:        "functions": [
// JSON-NEXT:     {
// JSON-NEXT:       "name": "decode_mlp",
// JSON-NEXT:       "args": [
// JSON-NEXT:         {
// JSON-NEXT:           "name": "arg0",
// JSON-NEXT:           "role": "input",
// JSON:            "buffers": [
// JSON-NEXT:         {
// JSON-NEXT:           "id": 0,
// JSON-NEXT:           "dtype": "bf16",
// JSON-NEXT:           "shape": [
// JSON-NEXT:             16,
// JSON-NEXT:             4096
// JSON-NEXT:           ]
// JSON-NEXT:         },
// JSON:            "launches": [
// JSON-NEXT:         {
// JSON-NEXT:           "kernel": "rmsnorm_0",
// JSON-NEXT:           "args": [
// JSON-NEXT:             {
// JSON-NEXT:               "arg": 0
// JSON-NEXT:             },
// JSON-NEXT:             {
// JSON-NEXT:               "arg": 1
// JSON-NEXT:             },
// JSON-NEXT:             {
// JSON-NEXT:               "buffer": 0
// JSON-NEXT:             }
// JSON-NEXT:           ]
// JSON-NEXT:         },

// The whole manifest, one fact per line (Inputs/manifest-summary.py also checks
// launches against parameters and kernels against the PTX entries).
// SUMMARY:      version 2 chip sm_90a ptx {{.*}}.ptx
// SUMMARY-NEXT: kernel rmsnorm_0 class=row grid=[16,1,1] block=[512,1,1] smem=0
// SUMMARY-NEXT:   op rmsnorm attrs={"eps": 9.99999974{{[0-9]*}}e-06} input=input weight=weight -> result
// SUMMARY-NEXT:   param input input bf16 [16,4096]
// SUMMARY-NEXT:   param weight input bf16 [4096]
// SUMMARY-NEXT:   param result output bf16 [16,4096]
// SUMMARY-NEXT: kernel matmul_silu_0 class=matmul grid=[256,1,1] block=[160,1,1] smem=81984
// SUMMARY-NEXT:   op matmul attrs={"transpose_a": false, "transpose_b": true} a=in0 b=in1 -> t0
// SUMMARY-NEXT:   op silu attrs={} input=t0 -> out0
// SUMMARY-NEXT:   value t0 bf16 [16,1024]
// SUMMARY-NEXT:   param in0 input bf16 [16,4096]
// SUMMARY-NEXT:   param in1 input bf16 [1024,4096]
// SUMMARY-NEXT:   param out0 output bf16 [16,1024]
// SUMMARY-NEXT:   param workspace workspace f32 [65600]
// SUMMARY-NEXT: kernel reduce_0 class=row grid=[16,1,1] block=[128,1,1] smem=0
// SUMMARY-NEXT:   op reduce attrs={"kind": "max"} input=input -> result
// SUMMARY-NEXT:   param input input bf16 [16,1024]
// SUMMARY-NEXT:   param result output f32 [16]
// SUMMARY-NEXT: kernel gelu_0 class=elementwise grid=[25,1,1] block=[256,1,1] smem=0
// SUMMARY-NEXT:   op gelu attrs={"approximate": "tanh"} input=input -> result
// SUMMARY-NEXT:   param input input f16 [8,6400]
// SUMMARY-NEXT:   param result output f16 [8,6400]
// SUMMARY-NEXT: function decode_mlp
// SUMMARY-NEXT:   arg arg0 input bf16 [16,4096]
// SUMMARY-NEXT:   arg arg1 input bf16 [4096]
// SUMMARY-NEXT:   arg arg2 input bf16 [1024,4096]
// SUMMARY-NEXT:   arg out0 output bf16 [16,1024]
// SUMMARY-NEXT:   arg out1 output f32 [16]
// SUMMARY-NEXT:   buffer 0 bf16 [16,4096]
// SUMMARY-NEXT:   buffer 1 f32 [65600]
// SUMMARY-NEXT:   launch rmsnorm_0 arg0 arg1 buf0
// SUMMARY-NEXT:   launch matmul_silu_0 buf0 arg2 arg3 buf1
// SUMMARY-NEXT:   launch reduce_0 arg3 arg4
// SUMMARY-NEXT: function gelu_tanh
// SUMMARY-NEXT:   arg arg0 input f16 [8,6400]
// SUMMARY-NEXT:   arg out0 output f16 [8,6400]
// SUMMARY-NEXT:   launch gelu_0 arg0 arg1
// SUMMARY-NEXT: consistent

// The module the pipeline leaves: host functions and the binary.
// MLIR:       module {
// MLIR:         func.func @decode_mlp(%{{.*}}: memref<16x4096xbf16>, %{{.*}}: memref<4096xbf16>, %{{.*}}: memref<1024x4096xbf16>, %{{.*}}: memref<16x1024xbf16>, %{{.*}}: memref<16xf32>)
// MLIR:         func.func @gelu_tanh(
// MLIR:         gpu.binary @kopt_kernels
// MLIR-SAME:      #gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// MLIR-SAME:      assembly = "

// SM90:       .target sm_90{{$}}
// sm_90 has no wgmma: the default for the decode GEMM is mma.sync.
// SM90-NOT:   wgmma
// SM90:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SM90-NOT:   wgmma
// SM90JSON:   "chip": "sm_90",

// NOOUTPUT:   gpu.binary @kopt_kernels

// MISSING:    error: kopt-emit-ptx needs output=FILE.ptx
// UNWRITABLE: error: cannot write the output: '{{.*}}.no-such-dir/out.ptx': No such file or directory
// JSONEXT:    error: output '{{.*}}.out.json' must not end in .json
// SELF: error: output '{{.*}}.self.mlir' is the input file; choose another PTX file
// SELFJSON: error: the manifest '{{.*}}.json' (output '{{.*}}.ptx' with .json) is the input file; choose another output name
// NOBINARY:   error: no gpu.binary with PTX (format=isa) in the module; run gpu-module-to-binary{format=isa} first
