//===- PackOperands.cpp - kopt-pack-operands ------------------------------===//
//
// Rewrites `C = A B` (f16/bf16, or f32 with `tf32`) whose operands the
// cp.async, TMA and wgmma schedules cannot read (an operand not contiguous
// along K, or rows that are not a multiple of 16 bytes) into
// `C = pack(A) pack(B)^T`: A copied to [M, K'], B to [N, K'], with K' = K
// rounded up to a multiple of 16 bytes (8 f16/bf16, 4 f32 elements) and
// zeros in the padding. The torch.compile
// (Inductor) GEMM templates pad K the same way; BLIS and GotoBLAS call the
// copies "packing".
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTPACKOPERANDS
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

/// The cp.async chunk and the TMA row-pitch unit: 16 bytes.
constexpr int64_t kChunkBytes = 16;

struct KoptPackOperandsPass
    : public kopt::impl::KoptPackOperandsBase<KoptPackOperandsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minReuse < 1) {
      emitError(getOperation().getLoc(),
                "kopt-pack-operands: min-reuse (kopt-to-ptx's pack-min-reuse, "
                "where 0 turns packing off) must be at least 1, got ")
          << static_cast<int64_t>(minReuse);
      return signalPassFailure();
    }
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp mm) {
      if (!mm->getParentOfType<KernelOp>())
        matmuls.push_back(mm);
    });
    for (MatmulOp mm : matmuls)
      packOperands(mm);
  }

  void packOperands(MatmulOp mm) {
    auto aType = cast<RankedTensorType>(mm.getA().getType());
    auto bType = cast<RankedTensorType>(mm.getB().getType());
    Type elt = aType.getElementType();
    if (!elt.isF16() && !elt.isBF16() && !(elt.isF32() && mm.getTf32()))
      return;
    const int64_t kChunkElements =
        kChunkBytes / (elt.getIntOrFloatBitWidth() / 8);
    bool ta = mm.getTransposeA(), tb = mm.getTransposeB();
    int64_t m = aType.getDimSize(ta ? 1 : 0), k = aType.getDimSize(ta ? 0 : 1);
    int64_t n = bType.getDimSize(tb ? 0 : 1);
    bool padK = k % kChunkElements != 0;
    bool packA = ta || padK, packB = !tb || padK;
    if (!packA && !packB)
      return;
    // Every operand that needs a copy must be worth one, or nothing is gained.
    if ((packA && n < minReuse) || (packB && m < minReuse))
      return;

    int64_t kp = llvm::alignTo(k, kChunkElements);
    OpBuilder b(mm);
    Location loc = mm.getLoc();
    // One copy per (operand, layout): a tensor packed for an earlier matmul
    // (which dominates this one: kopt functions have one block) is reused.
    auto packed = [&](Value v, bool transpose, int64_t rows) -> Value {
      auto type = RankedTensorType::get({rows, kp}, elt);
      auto key = std::make_tuple(v, int(transpose), Type(type));
      auto it = packs.find(key);
      if (it != packs.end() && it->second.getParentBlock() == mm->getBlock())
        return it->second;
      Value p = PackOp::create(b, loc, type, v, transpose).getResult();
      packs[key] = p;
      return p;
    };
    Value a = mm.getA(), bv = mm.getB();
    if (packA)
      a = packed(a, /*transpose=*/ta, m);
    if (packB)
      bv = packed(bv, /*transpose=*/!tb, n);
    auto rewritten = MatmulOp::create(b, loc, mm.getResult().getType(), a, bv,
                                      /*transpose_a=*/false,
                                      /*transpose_b=*/true, mm.getTf32());
    mm.getResult().replaceAllUsesWith(rewritten.getResult());
    mm.erase();
  }

  /// Packed copies made so far: (tensor, transposed, packed type) -> copy.
  DenseMap<std::tuple<Value, int, Type>, Value> packs;
};

} // namespace
