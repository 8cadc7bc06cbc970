//===- KoptOps.td - kopt operators ---------------------------*- tablegen -*-===//
//
// The formulas are in docs/ops.md; the executable definition is the lowering to
// linalg in passes/LowerToLinalg.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_OPS_TD
#define KOPT_OPS_TD

include "KoptDialect.td"
include "KoptAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"

// Every kopt op refuses attributes it does not define (a misspelled
// `tranpose_b` would otherwise be kept as a discardable attribute and ignored)
// and `kopt.`-prefixed ones; discardable attributes of other dialects
// (`dialect.name`) are kept (kopt::verifyKnownAttributes, docs/ops.md).
def Kopt_KnownAttributesOnly : NativeOpTrait<"KnownAttributesOnly"> {
  let cppNamespace = "::kopt";
}

class Kopt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kopt_Dialect, mnemonic, !listconcat(traits, [Kopt_KnownAttributesOnly])>;

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

def Kopt_MatmulOp : Kopt_Op<"matmul", [Pure]> {
  let summary = "2-D matrix product with f32 accumulation";
  let description = [{
    `result[m, n] = sum_k A[m, k] * B[k, n]`, accumulated in f32 and rounded once to
    the result type. `A` is `a` (shape MxK), or its transpose when `transpose_a` is
    set (`a` then has shape KxM); likewise `B` is `b` (KxN) or, with `transpose_b`,
    `b` has shape NxK (a PyTorch `Linear` weight). `a` and `b` have one element type;
    the result may have any of f32, f16, bf16.

    `tf32` (f32 operands only) allows TF32 tensor cores: each product may be of
    the operands' values cut to TF32 (8-bit exponent, 10-bit mantissa), still
    accumulated in f32, as PyTorch's `torch.backends.cuda.matmul.allow_tf32`
    allows cuBLAS. Without it f32 products are exact f32 products.

    ```mlir
    %c = kopt.matmul %x, %w {transpose_b} : tensor<16x4096xbf16>, tensor<14336x4096xbf16> -> tensor<16x14336xbf16>
    ```
  }];
  let arguments = (ins Kopt_Tensor:$a, Kopt_Tensor:$b,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$tf32);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pack
//===----------------------------------------------------------------------===//

def Kopt_PackOp : Kopt_Op<"pack", [Pure]> {
  let summary = "2-D copy into a zero-padded, optionally transposed layout";
  let description = [{
    Operand packing (as in BLIS and GotoBLAS): copies a 2-D tensor into a new
    layout that a matmul schedule can read with aligned, K-contiguous copies.
    `S` is `input` (shape RxC), or its transpose (CxR) when `transpose` is set;
    the result (shape R'xC' with R' >= rows of S, C' >= columns of S) is
    `result[i, j] = S[i, j]` where S has that element and `0` elsewhere. The
    element type is unchanged, so the copy is exact.

    Users rarely write it: `kopt-pack-operands` inserts it in front of matmuls
    whose operands are not K-contiguous or whose K is not a multiple of 8.

    ```mlir
    %bt = kopt.pack %b {transpose} : tensor<4093x4095xbf16> -> tensor<4095x4096xbf16>
    ```
  }];
  let arguments = (ins Kopt_Tensor:$input, UnitAttr:$transpose);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

class Kopt_BinaryOp<string mnemonic, string formula>
    : Kopt_Op<mnemonic, [Pure]> {
  let summary = "elementwise " # mnemonic # " with broadcasting";
  let description = [{
    `result = }] # formula # [{`, elementwise, after broadcasting `lhs` and `rhs` to
    the result shape as NumPy does: shapes are aligned at their trailing dimension, a
    missing leading dimension or a dimension of size 1 is repeated. All three element
    types are equal; f16 and bf16 are computed in f32 and rounded once.
  }];
  let arguments = (ins Kopt_Tensor:$lhs, Kopt_Tensor:$rhs);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kopt_AddOp : Kopt_BinaryOp<"add", "lhs + rhs">;
def Kopt_SubOp : Kopt_BinaryOp<"sub", "lhs - rhs">;
def Kopt_MulOp : Kopt_BinaryOp<"mul", "lhs * rhs">;
def Kopt_DivOp : Kopt_BinaryOp<"div", "lhs / rhs">;
def Kopt_MaxOp : Kopt_BinaryOp<"max", "max(lhs, rhs) (NaN if either is NaN)">;
def Kopt_MinOp : Kopt_BinaryOp<"min", "min(lhs, rhs) (NaN if either is NaN)">;

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Kopt_UnaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : Kopt_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = "elementwise " # mnemonic;
  let description = [{
    `result = }] # formula # [{`, elementwise; f16 and bf16 are computed in f32 and
    rounded once.
  }];
  let arguments = (ins Kopt_Tensor:$input);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kopt_ExpOp : Kopt_UnaryOp<"exp", "exp(x)">;
def Kopt_NegOp : Kopt_UnaryOp<"neg", "-x">;
def Kopt_AbsOp : Kopt_UnaryOp<"abs", "|x|">;
def Kopt_SqrtOp : Kopt_UnaryOp<"sqrt", "sqrt(x)">;
def Kopt_RsqrtOp : Kopt_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def Kopt_TanhOp : Kopt_UnaryOp<"tanh", "tanh(x)">;
def Kopt_LogOp : Kopt_UnaryOp<"log", "log(x)">;
def Kopt_Log1pOp : Kopt_UnaryOp<"log1p", "log(1 + x)">;
def Kopt_SigmoidOp : Kopt_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Kopt_ReluOp : Kopt_UnaryOp<"relu", "max(x, 0)">;
def Kopt_SiluOp : Kopt_UnaryOp<"silu", "x * sigmoid(x) = x * (1 / (1 + exp(-x)))">;

def Kopt_GeluOp : Kopt_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise GELU, erf or tanh form";
  let description = [{
    With `approximate(none)` (the default): `0.5 x (1 + erf(x / sqrt(2)))`.
    With `approximate(tanh)`: `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.
    These are PyTorch's `gelu(x, approximate=...)` (Hendrycks and Gimpel, 2016).
  }];
  let arguments = (ins Kopt_Tensor:$input,
      DefaultValuedAttr<Kopt_GeluApproximation,
                        "::kopt::GeluApproximation::None">:$approximate);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `(` $approximate^ `)`)? attr-dict `:` type($input)
  }];
}

def Kopt_CastOp : Kopt_Op<"cast", [Pure]> {
  let summary = "elementwise conversion between f32, f16 and bf16";
  let description = [{
    Converts each element to the result's element type, rounding to nearest even.
    The shapes are equal.
  }];
  let arguments = (ins Kopt_Tensor:$input);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Row operators (over the last dimension)
//===----------------------------------------------------------------------===//

def Kopt_ReduceOp : Kopt_Op<"reduce", [Pure]> {
  let summary = "sum, max or mean over the last dimension";
  let description = [{
    Reduces the last dimension: the result's shape is the input's without its last
    dimension (a rank-1 input gives a rank-0 tensor). Accumulates in f32; `mean` is
    the sum divided by the dimension's size. The result may have any of f32, f16,
    bf16.

    ```mlir
    %m = kopt.reduce max %logits : tensor<8x128256xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Kopt_ReduceKind:$kind, Kopt_Tensor:$input);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kopt_SoftmaxOp : Kopt_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax over the last dimension";
  let description = [{
    `result[..., i] = exp(x[..., i] - m) * (1 / sum_j exp(x[..., j] - m))`
    with `m = max_j x[..., j]`, computed in f32.
  }];
  let arguments = (ins Kopt_Tensor:$input);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kopt_RMSNormOp : Kopt_Op<"rmsnorm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `result = x / sqrt(mean(x^2) + eps) * weight` over the last dimension (of size
    N), computed in f32 (Zhang and Sennrich, 2019; Llama's RMSNorm). `weight` (shape
    [N], the input's element type) is optional.

    ```mlir
    %y = kopt.rmsnorm %x weight(%w : tensor<4096xbf16>) eps = 1.0e-05 : tensor<16x4096xbf16>
    ```
  }];
  let arguments = (ins Kopt_Tensor:$input, Optional<Kopt_Tensor>:$weight, F32Attr:$eps);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)? `eps` `=` $eps attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
}

def Kopt_LayerNormOp : Kopt_Op<"layernorm",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `result = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias` over the last
    dimension (of size N), with the biased variance `var(x) = mean((x - mean(x))^2)`,
    computed in f32 (Ba et al., 2016; PyTorch's `layer_norm`). `weight` and `bias`
    (shape [N], the input's element type) are each optional.
  }];
  let arguments = (ins Kopt_Tensor:$input, Optional<Kopt_Tensor>:$weight,
                       Optional<Kopt_Tensor>:$bias, F32Attr:$eps);
  let results = (outs Kopt_Tensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? `eps` `=` $eps attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Kopt_KernelOp : Kopt_Op<"kernel", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a group of ops compiled into one GPU kernel";
  let description = [{
    Made by `kopt-fuse`. The body computes the results from the block arguments,
    which are bound to `inputs`; `kopt-lower-to-gpu` outlines it and `kopt-tile` turns the whole body into one
    GPU kernel. `source` describes the kopt op(s) it was made from, for the launch
    manifest: `{name = "softmax", attrs = {...}, params = ["input", "result"]}`.

    A matmul kernel's `schedule` is chosen and checked by
    `kopt-select-schedule` alone, which then sets `schedule_checked_for` to the
    chip it checked the schedule for: the passes after it (`kopt-tile`) trust
    a schedule so marked and refuse one that is not, or one checked for
    another chip, instead of checking it again (docs/schedules.md).
  }];
  let arguments = (ins StrAttr:$sym_name, Variadic<Kopt_Tensor>:$inputs,
                       OptionalAttr<DictionaryAttr>:$source,
                       OptionalAttr<Kopt_ScheduleAttr>:$schedule,
                       OptionalAttr<StrAttr>:$schedule_checked_for);
  let results = (outs Variadic<Kopt_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`ins` `(` $inputs^ `:` type($inputs) `)`)? (`->` type($results)^)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  // `source` against the body's op, once that op is verified.
  let hasRegionVerifier = 1;
}

def Kopt_YieldOp : Kopt_Op<"yield", [Pure, Terminator,
    ParentOneOf<["KernelOp", "MainloopOp"]>]> {
  let summary = "returns a kernel's results, or a mainloop step's accumulators";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* no values */ }]>];
}

//===----------------------------------------------------------------------===//
// Tiled kernels (between kopt-tile and kopt-pipeline)
//===----------------------------------------------------------------------===//

def Kopt_MainloopOp : Kopt_Op<"mainloop", [AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">, MemoryEffects<[MemWrite]>]> {
  let summary = "the K loop of a block tile: operand tiles in shared memory, "
                "one compute step per K tile";
  let description = [{
    Made by the matmul kernel builder (kopt-tile) inside a `gpu.func`,
    expanded by `kopt-pipeline`. Computes, for the block tile whose origin is
    (`m0`, `n0`), the K tiles 0 ... `k_tiles` - 1 of `block_k` elements
    starting at K element `k_begin` (0 when absent; split-K's first element of
    the block's split): for each K tile, the `block_m` x `block_k` tile of A at
    (m0, k) and the `block_n` x `block_k` tile of B at (n0, k) (rows and
    columns outside the operands read as zeros) are staged in shared memory and
    the body runs once on them, its block arguments being the two staged tiles
    (`memref`s in address space 3, the layout their type says: [rows][block_k
    + 8] for mma.sync, [block_k / 64][rows][64] 128-byte swizzled for wgmma)
    and the accumulators (`init` first, then the previous step's `kopt.yield`).
    The results are the last step's accumulators, complete (for wgmma, every
    asynchronous MMA group has been waited for).

    How the tiles are staged is `kopt-pipeline`'s work, as `schedule` says:
    `copy` (synchronous loads, cp.async or TMA through the two i64
    `tensor_maps`), `stages` shared-memory buffers with the loads of the next
    `stages` - 1 K tiles in flight, `warp_specialize` (a producer warp issues
    the loads), and in a `persistent` grid, where the op is the body of the
    block's loop over its tiles (an `scf.for` from 0 step 1), loads that run
    ahead into the next tile. Shared memory: A's buffers from byte 0, B's
    after them; `barrier_offset`, the byte offset of TMA's mbarriers.
    `indexing_maps` are the contraction's maps of A and B ((m, n, k) -> the
    operand's indices): they give M, N, K from the operands' shapes and how
    synchronous loads index them. With `drain`, the code after the op reuses
    the buffers' shared memory, so no copy may still be in flight when it
    starts.
  }];
  // It reads A and B and writes shared memory (the staged tiles): never
  // removed or moved across other memory accesses before kopt-pipeline.
  let arguments = (ins Arg<AnyMemRef, "A", [MemRead]>:$a,
                       Arg<AnyMemRef, "B", [MemRead]>:$b,
                       Variadic<I64>:$tensor_maps,
                       Index:$m0, Index:$n0, Optional<Index>:$k_begin,
                       Index:$k_tiles, Variadic<AnyType>:$init,
                       Kopt_ScheduleAttr:$schedule,
                       AffineMapArrayAttr:$indexing_maps,
                       OptionalAttr<I64Attr>:$barrier_offset,
                       UnitAttr:$drain);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $a `,` $b (`maps` `(` $tensor_maps^ `)`)? `tile` `(` $m0 `,` $n0 `)`
    (`k_begin` $k_begin^)? `k_tiles` $k_tiles
    (`iter_args` `(` $init^ `:` type($init) `)`)?
    attr-dict `:` type($a) `,` type($b) (`->` type($results)^)? $body
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Host functions (from kopt-lower-to-gpu on)
//===----------------------------------------------------------------------===//

def Kopt_LaunchOp : Kopt_Op<"launch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "launches an outlined kernel from a host function";
  let description = [{
    Made by `kopt-lower-to-gpu`, one per kernel in the order the host function
    runs them; `kopt-tile` sets the grid, block and dynamic shared memory
    (bytes) and appends the kernel's workspace and tensor maps to `args`. The
    launch manifest (lib/Target/ManifestFromModule.cpp) is written from these
    ops: `kernel_class` (a kernel class of docs/manifest.md), `num_inputs` and
    `num_outputs` (the first `args` are the kernel's inputs, then its outputs,
    then workspace and tensor maps), `source` (the kopt op or ops it computes),
    `schedule` (the checked schedule of a matmul kernel) and `cluster_size`
    (blocks per thread-block cluster, x, y, z, at most 8 in all, dividing the
    grid: the kernel's compile-time cluster shape; absent: no cluster).

    `kernel` names a kernel `gpu.func` of a `gpu.module`, or a `gpu.binary`
    after `gpu-module-to-binary`; the argument types must be the kernel's
    parameter types. The check resolves symbols through one symbol table per
    module (SymbolUserOpInterface), so verifying a module is linear in its
    launches; MLIR 22's `gpu.launch_func` is resolved by the verifier of
    `gpu.container_module` with a scan of the `gpu.module` per launch, which
    made every verification quadratic in the number of kernels.
  }];
  let arguments = (ins SymbolRefAttr:$kernel,
                       Index:$grid_x, Index:$grid_y, Index:$grid_z,
                       Index:$block_x, Index:$block_y, Index:$block_z,
                       I32:$dynamic_shared_memory_size,
                       Variadic<AnyType>:$args,
                       StrAttr:$kernel_class,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$num_inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$num_outputs,
                       OptionalAttr<DictionaryAttr>:$source,
                       OptionalAttr<Kopt_ScheduleAttr>:$schedule,
                       OptionalAttr<DenseI32ArrayAttr>:$cluster_size);
  let assemblyFormat = [{
    $kernel `blocks` `in` ` ` `(` $grid_x `,` $grid_y `,` $grid_z `)`
    `threads` `in` ` ` `(` $block_x `,` $block_y `,` $block_z `)`
    `dynamic_shared_memory_size` $dynamic_shared_memory_size
    (`args` `(` $args^ `:` type($args) `)`)? attr-dict
  }];
  let extraClassDeclaration = [{
    /// The kernel's name within its gpu.module (the leaf of `kernel`).
    ::mlir::StringAttr getKernelName() {
      return getKernel().getLeafReference();
    }
    /// The grid and block sizes, x, y, z.
    ::llvm::SmallVector<::mlir::Value, 3> getGridSizes() {
      return {getGridX(), getGridY(), getGridZ()};
    }
    ::llvm::SmallVector<::mlir::Value, 3> getBlockSizes() {
      return {getBlockX(), getBlockY(), getBlockZ()};
    }
  }];
  let hasVerifier = 1;
}

#endif // KOPT_OPS_TD
