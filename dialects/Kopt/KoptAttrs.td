//===- KoptAttrs.td - kopt attributes ------------------------*- tablegen -*-===//
//
// #kopt.schedule: how a kernel computes (tiles, warps, stages, instruction,
// copy engine). The same data as kopt::schedule::MatmulSchedule
// (include/kopt/Schedule/Schedule.h), which also reads and writes it as JSON
// (docs/schedules.md).
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_ATTRS_TD
#define KOPT_ATTRS_TD

include "KoptDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Kopt_ScheduleInstruction : I32EnumAttr<"ScheduleInstruction",
    "the instruction computing the multiply-accumulates", [
      I32EnumAttrCase<"ffma", 0>,
      I32EnumAttrCase<"mma_sync", 1>,
      I32EnumAttrCase<"wgmma", 2>,
      I32EnumAttrCase<"gemv", 3>
    ]> {
  let cppNamespace = "::kopt";
  let genSpecializedAttr = 0;
}

def Kopt_ScheduleCopy : I32EnumAttr<"ScheduleCopy",
    "how operand tiles reach shared memory", [
      I32EnumAttrCase<"sync", 0>,
      I32EnumAttrCase<"cp_async", 1>,
      I32EnumAttrCase<"tma", 2>
    ]> {
  let cppNamespace = "::kopt";
  let genSpecializedAttr = 0;
}

def Kopt_ScheduleAttr : AttrDef<Kopt_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "a matmul kernel's schedule";
  let description = [{
    Block tile `block_m` x `block_n` (elements of C), K step `block_k`, warp tile
    `warp_m` x `warp_n` (the block has (block_m / warp_m) * (block_n / warp_n)
    warps), `stages` shared-memory buffers in the K loop, `split_k` slices of K,
    grouped rasterization of `swizzle` tile rows, `vector_width` output elements
    per epilogue store, `persistent` grid, `warp_specialize` (a producer warp
    issues the TMA copies) and `tma_store` (the staged epilogue tile leaves
    through TMA stores), the last two printed only when true. Example:

    ```mlir
    #kopt.schedule<instruction = mma_sync, copy = cp_async, block_m = 128,
                   block_n = 128, block_k = 32, warp_m = 64, warp_n = 32,
                   stages = 3, split_k = 1, swizzle = 8, vector_width = 2,
                   persistent = false>
    ```

    Whether a schedule fits a workload and a target is checked once, by
    kopt-select-schedule (kopt::schedule::check: the error names the
    constraint's id), which marks the kernel's schedule checked
    (`kopt.kernel`'s `schedule_checked_for`); the attribute itself only
    requires positive sizes.
  }];
  let parameters = (ins
    EnumParameter<Kopt_ScheduleInstruction>:$instruction,
    EnumParameter<Kopt_ScheduleCopy>:$copy,
    "int64_t":$block_m, "int64_t":$block_n, "int64_t":$block_k,
    "int64_t":$warp_m, "int64_t":$warp_n, "int64_t":$stages,
    "int64_t":$split_k, "int64_t":$swizzle, "int64_t":$vector_width,
    "bool":$persistent,
    DefaultValuedParameter<"bool", "false">:$warp_specialize,
    DefaultValuedParameter<"bool", "false">:$tma_store
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The schedule as plain data.
    ::kopt::schedule::MatmulSchedule getSchedule() const;
    /// The attribute of `s`.
    static ScheduleAttr get(::mlir::MLIRContext *ctx,
                            const ::kopt::schedule::MatmulSchedule &s);
  }];
}

#endif // KOPT_ATTRS_TD
