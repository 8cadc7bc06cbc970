//===- TmaRing.cpp - the TMA ring of a wgmma mainloop ---------------------===//
//
// copy = tma: the operand tiles of a wgmma mainloop reach shared memory by
// cp.async.bulk.tensor boxes that one thread issues, signalled on "full"
// mbarriers, their stages released on "empty" ones (TmaRing.h).
//
//===----------------------------------------------------------------------===//

#include "TmaRing.h"
#include "../Common.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

Value TmaRing::parity(OpBuilder &b, Location loc, Value f,
                      bool previous) const {
  Value phase = arith::DivUIOp::create(b, loc, f, indexConst(b, loc, stages));
  if (previous)
    phase = arith::AddIOp::create(b, loc, phase, indexConst(b, loc, 1));
  Value bit = arith::RemUIOp::create(b, loc, phase, indexConst(b, loc, 2));
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), bit);
}

Value TmaRing::barrier(OpBuilder &b, Location loc, Value stage,
                       int64_t which) const {
  auto i64 = b.getI64Type();
  Value idx =
      arith::AddIOp::create(b, loc, stage, indexConst(b, loc, which * stages));
  Value idx64 = arith::IndexCastUIOp::create(b, loc, i64, idx);
  Value off = arith::MulIOp::create(
      b, loc, idx64, arith::ConstantIntOp::create(b, loc, i64, 8).getResult());
  Value addr = arith::AddIOp::create(b, loc, barriers, off);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
}

void TmaRing::wait(OpBuilder &b, Location loc, Value bar,
                   Value parityBit) const {
  Value ticks =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), kSuspendHintNs);
  NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parityBit, ticks);
}

void TmaRing::init(OpBuilder &b, Location loc, int64_t warps) const {
  auto ifOp = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
    Value all = arith::ConstantIntOp::create(b, loc, b.getI32Type(), warps);
    for (int64_t i = 0; i < stages; ++i) {
      Value stage = indexConst(b, loc, i);
      Value full = barrier(b, loc, stage, 0);
      NVVM::MBarrierInitOp::create(b, loc, full, one, Value());
      Value empty = barrier(b, loc, stage, 1);
      NVVM::MBarrierInitOp::create(b, loc, empty, all, Value());
    }
    NVVM::FenceMbarrierInitOp::create(b, loc);
  }
  gpu::BarrierOp::create(b, loc);
}

void TmaRing::waitFull(OpBuilder &b, Location loc, Value f) const {
  Value stage = arith::RemUIOp::create(b, loc, f, indexConst(b, loc, stages));
  Value bar = barrier(b, loc, stage, 0);
  wait(b, loc, bar, parity(b, loc, f, /*previous=*/false));
}

void TmaRing::release(OpBuilder &b, Location loc, Value f) const {
  Value notFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, f,
                                         indexConst(b, loc, 1));
  Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      indexConst(b, loc, 0));
  Value cond = arith::AndIOp::create(b, loc, notFirst, lane0);
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value prev = arith::SubIOp::create(b, loc, f, indexConst(b, loc, 1));
  Value stage =
      arith::RemUIOp::create(b, loc, prev, indexConst(b, loc, stages));
  Value empty = barrier(b, loc, stage, 1);
  NVVM::MBarrierArriveOp::create(b, loc, Type(), empty, Value(),
                                 NVVM::MemScopeKindAttr());
}

void TmaRing::issue(OpBuilder &b, Location loc, Value f, Value m0, Value n0,
                    Value kElem, Value valid, bool mayReuse,
                    bool byLeader) const {
  Value cond = byLeader ? leader : Value();
  if (valid)
    cond = cond ? arith::AndIOp::create(b, loc, cond, valid) : valid;
  OpBuilder::InsertionGuard guard(b);
  if (cond) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  auto i32 = b.getI32Type();
  auto i64 = b.getI64Type();
  Value stage = arith::RemUIOp::create(b, loc, f, indexConst(b, loc, stages));
  if (mayReuse) {
    Value reuse = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, f,
                                        indexConst(b, loc, stages));
    auto waitIf = scf::IfOp::create(b, loc, reuse, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(waitIf.thenBlock());
    Value empty = barrier(b, loc, stage, 1);
    wait(b, loc, empty, parity(b, loc, f, /*previous=*/true));
  }
  Value full = barrier(b, loc, stage, 0);
  Value tx = arith::ConstantIntOp::create(
      b, loc, i32, subTiles * (boxRowsA + boxRowsB) * 128);
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), full, tx, NVVM::MemScopeKindAttr(), BoolAttr(), Value());
  Value stage64 = arith::IndexCastUIOp::create(b, loc, i64, stage);
  // The destination as a shared::cluster address (address space 7): a
  // CTA's own shared::cta addresses are valid shared::cluster addresses of
  // that CTA (PTX ISA, state spaces); the launch has no cluster.
  auto ptr7 = LLVM::LLVMPointerType::get(b.getContext(), 7);
  Value rowA = arith::IndexCastUIOp::create(b, loc, i32, m0);
  Value rowB = arith::IndexCastUIOp::create(b, loc, i32, n0);
  for (int64_t sub = 0; sub < subTiles; ++sub) {
    Value k = arith::AddIOp::create(b, loc, kElem,
                                    indexConst(b, loc, rowElements * sub));
    Value k32 = arith::IndexCastUIOp::create(b, loc, i32, k);
    for (int operand = 0; operand < 2; ++operand) {
      int64_t stageBytes = operand ? bytesB : bytesA;
      int64_t rows = operand ? rowsB : rowsA;
      Value stageOff = arith::MulIOp::create(
          b, loc, stage64,
          arith::ConstantIntOp::create(b, loc, i64, stageBytes).getResult());
      Value base =
          arith::AddIOp::create(b, loc, operand ? baseB : baseA, stageOff);
      Value addr = arith::AddIOp::create(
          b, loc, base,
          arith::ConstantIntOp::create(b, loc, i64, sub * rows * 128)
              .getResult());
      Value dst = LLVM::IntToPtrOp::create(b, loc, ptr7, addr);
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          b, loc, dst, operand ? mapB : mapA,
          ValueRange{k32, operand ? rowB : rowA}, full, ValueRange{}, Value(),
          Value(), NVVM::TMALoadModeAttr(), BoolAttr(),
          NVVM::CTAGroupKindAttr(), Value());
    }
  }
}
