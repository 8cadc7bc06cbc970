//===- KoptAttrs.cpp - kopt attributes ------------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kopt;

#define GET_ATTRDEF_CLASSES
#include "kopt/Dialect/Kopt/KoptAttrs.cpp.inc"

namespace sched = kopt::schedule;

void KoptDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kopt/Dialect/Kopt/KoptAttrs.cpp.inc"
      >();
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ScheduleInstruction, ScheduleCopy,
                                   int64_t blockM, int64_t blockN,
                                   int64_t blockK, int64_t warpM, int64_t warpN,
                                   int64_t stages, int64_t splitK,
                                   int64_t swizzle, int64_t vectorWidth, bool,
                                   bool, bool) {
  std::pair<const char *, int64_t> sizes[] = {
      {"block_m", blockM}, {"block_n", blockN},  {"block_k", blockK},
      {"warp_m", warpM},   {"warp_n", warpN},    {"stages", stages},
      {"split_k", splitK}, {"swizzle", swizzle}, {"vector_width", vectorWidth}};
  for (auto [name, v] : sizes)
    if (v <= 0)
      return emitError() << "schedule parameter " << name
                         << " must be positive, got " << v;
  return success();
}

sched::MatmulSchedule ScheduleAttr::getSchedule() const {
  sched::MatmulSchedule s;
  s.instruction = static_cast<sched::Instruction>(getInstruction());
  s.copy = static_cast<sched::CopyEngine>(getCopy());
  s.blockM = getBlockM();
  s.blockN = getBlockN();
  s.blockK = getBlockK();
  s.warpM = getWarpM();
  s.warpN = getWarpN();
  s.stages = getStages();
  s.splitK = getSplitK();
  s.swizzle = getSwizzle();
  s.vectorWidth = getVectorWidth();
  s.persistent = getPersistent();
  s.warpSpecialize = getWarpSpecialize();
  s.tmaStore = getTmaStore();
  return s;
}

ScheduleAttr ScheduleAttr::get(MLIRContext *ctx,
                               const sched::MatmulSchedule &s) {
  return get(ctx, static_cast<ScheduleInstruction>(s.instruction),
             static_cast<ScheduleCopy>(s.copy), s.blockM, s.blockN, s.blockK,
             s.warpM, s.warpN, s.stages, s.splitK, s.swizzle, s.vectorWidth,
             s.persistent, s.warpSpecialize, s.tmaStore);
}

// The enums of the attribute and of kopt::schedule must stay in step.
static_assert(static_cast<int>(ScheduleInstruction::ffma) ==
                  static_cast<int>(sched::Instruction::FFMA) &&
              static_cast<int>(ScheduleInstruction::mma_sync) ==
                  static_cast<int>(sched::Instruction::MmaSync) &&
              static_cast<int>(ScheduleInstruction::wgmma) ==
                  static_cast<int>(sched::Instruction::Wgmma));
static_assert(static_cast<int>(ScheduleCopy::sync) ==
                  static_cast<int>(sched::CopyEngine::Sync) &&
              static_cast<int>(ScheduleCopy::cp_async) ==
                  static_cast<int>(sched::CopyEngine::CpAsync) &&
              static_cast<int>(ScheduleCopy::tma) ==
                  static_cast<int>(sched::CopyEngine::TMA));
