//===- Passes.td - kopt passes -------------------------------*- tablegen -*-===//
#ifndef KOPT_PASSES_TD
#define KOPT_PASSES_TD

include "mlir/Pass/PassBase.td"

def KoptCheckTarget : Pass<"kopt-check-target", "mlir::ModuleOp"> {
  let summary = "Check the kopt-to-ptx target options before compiling";
  let description = [{
    Rejects, with an error naming the option, what the later passes would turn into
    a crash, a fatal LLVM error or PTX that ptxas refuses: a chip kopt does not
    generate code for (kopt's kernels use mma.sync, ldmatrix and cp.async: sm_80 or
    newer; sm_80, sm_86, sm_87, sm_89, sm_90 and sm_90a are accepted), PTX features
    other than `+ptxNN` with NN from 80 to 88, an optimization level outside 0-3,
    and a CUDA toolkit folder without libdevice (nvvm/libdevice/libdevice.10.bc).
    Also rejects functions in nested modules, which kopt would not compile.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"", "target GPU">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX ISA version">,
    Option<"optLevel", "O", "int", /*default=*/"3", "LLVM optimization level">,
    Option<"cudaPath", "cuda-path", "std::string", /*default=*/"\"\"",
           "the CUDA toolkit (empty: not checked)">,
  ];
}

def KoptPackOperands : Pass<"kopt-pack-operands", "mlir::ModuleOp"> {
  let summary = "Pack matmul operands into zero-padded, K-contiguous copies";
  let description = [{
    The fast matmul schedules (cp.async copies, wgmma) read 16-byte chunks of A
    and B along K: they need both operands contiguous along K (A stored [M, K],
    B stored [N, K], i.e. `transpose_b`) and K a multiple of 8. For an f16 or
    bf16 `kopt.matmul` that misses this, inserts `kopt.pack` ops that copy A into
    [M, K'] and B into [N, K'] (transposing where needed, K' = K rounded up to a
    multiple of 8, zeros in the padding) and rewrites the matmul to read them
    (`transpose_b`). Zeros in the padded K columns add nothing to the f32 sums,
    so the result is the same.

    A copy costs a read and a write of the operand, worth it only when each
    element is reused by many outputs: an operand is packed only when the
    other operand's row count (N for A, M for B) is at least `min-reuse`; when
    an operand that must be packed does not qualify, the matmul is left as it
    is (the synchronous-copy schedules handle every layout). f32 matmuls, whose
    FFMA schedules read any layout, are left as they are.
  }];
  let options = [
    Option<"minReuse", "min-reuse", "int64_t", /*default=*/"128",
           "pack an operand only when the other operand has at least this "
           "many rows (M for B, N for A)">,
  ];
  let dependentDialects = ["kopt::KoptDialect"];
}

def KoptFuse : Pass<"kopt-fuse", "mlir::ModuleOp"> {
  let summary = "Group kopt ops into kernels (kopt.kernel regions)";
  let description = [{
    Wraps the kopt ops of every function into `kopt.kernel` ops, each of which
    becomes one GPU kernel. Chains of elementwise ops (binary ops with
    broadcasts, unary ops, gelu, cast) whose results have one shape form one
    kernel, and a row op (reduce, softmax, rmsnorm, layernorm) takes into its
    kernel the elementwise ops over its input's shape that produce its input
    (add before RMSNorm, scale and mask before softmax) or consume its result:
    a producer joins its consumer's kernel unless that would put two row ops
    in one kernel or make the kernels depend on each other in a cycle; a
    value also used outside the kernel is one of its outputs (add + RMSNorm
    writes the sum and the normalized rows). A matmul takes the elementwise
    ops over its [M, N] result that read it as its fused epilogue (bias,
    GELU, SiLU, residual, SwiGLU), when the kernel keeps one output of the
    matmul's element type and the matmul's operands come from outside; a
    kernel holds at most one matmul or row op. Pack ops form their own
    kernels. The kernel records the ops it computes (`source`)
    for the launch manifest. Kernel names are `<op>_<n>` (a fused kernel:
    its ops' names joined by `_`, the first four and then `_more` for longer
    chains, then `_<n>`), numbered across the module. `fuse=false` puts every
    op in its own kernel; `plan=FILE` overrides the plan per kernel
    (`{"split": ["matmul_add_gelu_0"]}`: that kernel of the default plan
    becomes one kernel per op; the others keep their names). A fused kernel
    takes at most `max-params` buffers
    (inputs and outputs): PTX ISA 8.0 limits a kernel's parameters to 4352
    bytes (8 per buffer pointer), so a merge past the limit is not made.
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Fuse chains of elementwise ops, row ops with their "
           "elementwise producers and consumers, and matmuls with their "
           "elementwise epilogues, into one kernel (false: one kernel per "
           "op)">,
    Option<"maxParams", "max-params", "unsigned", /*default=*/"256",
           "Most buffers (inputs and outputs) of a fused kernel">,
    Option<"planFile", "plan", "std::string", /*default=*/"\"\"",
           "JSON file of overrides of the fusion plan: {\"split\": [NAME, "
           "...]} makes each named fused kernel of the default plan one "
           "kernel per op">,
  ];
  let dependentDialects = ["kopt::KoptDialect"];
}

def KoptSelectSchedule : Pass<"kopt-select-schedule", "mlir::ModuleOp"> {
  let summary = "Attach a #kopt.schedule to every matmul kernel";
  let description = [{
    Picks each matmul kernel's schedule and attaches it as the kernel's
    `schedule` attribute: from the JSON file `schedule` when it has an entry for
    the kernel (by kernel name, by workload key, or `"*"`; a bare schedule object
    applies to every matmul kernel; missing parameters keep the default's
    values), else a schedule already on the kernel, else the default heuristic
    (kopt::schedule::defaultSchedule). Every schedule is checked against the
    workload and the target before anything is compiled: an invalid one is an
    error at the kernel naming the reason and the constraint's id. This is the
    only pass that defaults or checks schedules: it sets the kernel's
    `schedule_checked_for` to `chip`, and kopt-tile requires that mark (for its
    own chip) instead of checking the schedule again. With `print-space`, prints each
    matmul kernel's space (domains, constraints, default, number of valid
    points) as a JSON array to stdout. docs/schedules.md has the format.

    With `tuning-db`, a kernel without a schedule attribute starts from the
    best schedule the tuning database (kopt-tune --db, docs/tuning.md) records
    for its workload key and op chain (else any op chain of that key) measured
    on a GPU by this kopt version, instead of the heuristic's; a schedule file
    entry still applies on top. Records of other kopt versions are ignored, and
    a record that this version's constraints reject is not used. Each matmul
    kernel then gets a remark saying where its schedule came from.
  }];
  let options = [
    Option<"scheduleFile", "schedule", "std::string", /*default=*/"\"\"",
           "JSON file of schedules to apply">,
    Option<"tuningDb", "tuning-db", "std::string", /*default=*/"\"\"",
           "tuning database (SQLite, kopt-tune --db) whose best records give "
           "the schedules">,
    Option<"printSpace", "print-space", "bool", /*default=*/"false",
           "print each matmul kernel's schedule space as JSON to stdout">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "target GPU whose limits constrain the schedules">,
  ];
  let dependentDialects = ["kopt::KoptDialect"];
}

def KoptLowerToLinalg : Pass<"kopt-lower-to-linalg"> {
  let summary = "Lower kopt ops to linalg on tensors: the definition of their semantics";
  let description = [{
    Rewrites every kopt operator into `linalg.fill` and `linalg.generic` ops on
    tensors whose scalar payloads (arith and math) are the op's formula
    (docs/ops.md). f16 and bf16 values are extended to f32 inside the payloads and
    rounded once at the end; reductions and contractions accumulate in f32.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::tensor::TensorDialect"];
}

def KoptLowerToGPU : Pass<"kopt-lower-to-gpu", "mlir::ModuleOp"> {
  let summary = "Outline each kopt.kernel into a gpu.func and launch it";
  let description = [{
    Rewrites each function over tensors into a host function over memrefs in
    destination-passing style (inputs, then one output buffer per result) that
    launches one `gpu.func` of `gpu.module @kopt_kernels` per `kopt.kernel`
    (`gpu.launch_func`); intermediate tensors become `memref.alloc` buffers.
    The gpu.func takes the kernel's memrefs (inputs, then results) and holds
    the kernel itself, its inputs cast from the parameters
    (`builtin.unrealized_conversion_cast`), for `kopt-tile` to build; the
    launch's grid, block and shared memory are placeholders (1, 1, 0) until
    then. The launch carries the kernel's class, its source op
    (`kopt.source`) and its operand counts for the manifest.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def KoptTile : Pass<"kopt-tile", "mlir::ModuleOp"> {
  let summary = "Tile the matmul kernels with upstream MLIR, then build each outlined kernel's body as its class and schedule say";
  let description = [{
    For each `gpu.func` holding a `kopt.kernel` (made by kopt-lower-to-gpu):

    1. Matmul kernels are tiled with upstream MLIR as their `schedule`
       attribute says, which kopt-select-schedule chose and checked for
       `chip` (`schedule_checked_for`; a kernel without such a schedule is an
       error that says to run kopt-select-schedule first): TilingInterface
       tile-and-fuse of the epilogue and the contraction to block tiles (an
       scf.forall), zero padding to whole tiles (linalg::rewriteAsPaddedOp),
       K tiles (an scf.for), each K tile of A and B promoted to shared memory
       (bufferization.alloc_tensor in workgroup memory, as
       transform.structured.promote_tensor makes it), warp tiles (an
       scf.forall mapped to warps or warpgroups) and thread tiles (instruction
       tiles; FFMA's scf.forall over threads). With `tiling-only` the pass
       stops here, the kernels still linalg on tensors. A kernel that arrives
       tiled is accepted only when it is exactly what this step makes for its
       schedule (its untiled body rebuilt, tiled and compared).
    2. The kernel body is built with the kernel builder of its class
       (include/kopt/Transforms/KernelBuilders.h); the matmul builder lowers
       the tiled form: the grid over the output (block tiles,
       grouped rasterization, split-K, a persistent grid's tile loop), warps
       and their tensor-core instructions or FFMA threads, partial tiles
       zero-padded on load and masked on store, the epilogue (with the
       schedule's `tma_store`, TMA stores of the staged tile); for the
       tensor-core matmuls the K loop stays a `kopt.mainloop` (its operand
       tiles staged in shared memory, one K tile's ldmatrix + mma.sync or
       wgmma as its body) for kopt-pipeline. Then sets each launch's grid,
       block and dynamic shared memory, and adds the kernel's split-K
       workspace and TMA tensor maps to its operands.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "target GPU whose limits constrain the schedules">,
    Option<"tilingOnly", "tiling-only", "bool", /*default=*/"false",
           "only tile the matmul kernels with upstream MLIR (block tiles, "
           "padding, K tiles, promotion), leaving them linalg on tensors; "
           "build nothing">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::nvgpu::NVGPUDialect", "mlir::NVVM::NVVMDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::func::FuncDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def KoptPipeline : Pass<"kopt-pipeline", "mlir::ModuleOp"> {
  let summary = "Software-pipeline the K loops of the matmul kernels";
  let description = [{
    Expands every `kopt.mainloop` (the K loop of a tensor-core matmul's block
    tile, made by kopt-tile) into the loop that stages its operand
    tiles in shared memory as its schedule says, and runs its body (the
    tile's ldmatrix + mma.sync or wgmma) once per K tile:
      - `copy = sync`: one buffer, loads into registers then stores, a
        barrier before and after the body;
      - `copy = cp_async`: a ring of `stages` buffers; the copies of K tile
        kt + stages - 1 are in flight while tile kt is computed
        (cp.async.commit_group / wait_group);
      - `copy = tma`: a ring of `stages` buffers filled by
        cp.async.bulk.tensor from one thread, with a "full" and an "empty"
        mbarrier per stage; wgmma groups are committed and waited for so
        that one K tile's MMA overlaps the next one's wait;
      - `warp_specialize`: a producer warp issues every TMA load, each
        after its stage is released; the warpgroups wait, compute, release;
      - `persistent`: the ring runs on across the block's tiles (the loads
        of the next tile during this one's last K tiles and epilogue).
    The body and everything else in the kernel stay as they are.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::nvgpu::NVGPUDialect", "mlir::NVVM::NVVMDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KoptEmitPTX : Pass<"kopt-emit-ptx", "mlir::ModuleOp"> {
  let summary = "Write the PTX of gpu.binary ops and the launch manifest";
  let description = [{
    Reads the PTX text that `gpu-module-to-binary{format=isa}` left in the module's
    `gpu.binary` and writes it to `output`, and writes the launch manifest
    (docs/manifest.md) beside it, with the extension replaced by `.json`.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "the PTX file to write (the manifest goes beside it as .json)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "the target recorded in the manifest">,
    Option<"cudaPath", "cuda-path", "std::string", /*default=*/"\"\"",
           "the CUDA toolkit searched for libdevice (named in errors only)">,
  ];
}

#endif // KOPT_PASSES_TD
