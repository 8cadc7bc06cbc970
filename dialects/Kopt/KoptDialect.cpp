//===- KoptDialect.cpp - the kopt dialect ---------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kopt;

#include "kopt/Dialect/Kopt/KoptDialect.cpp.inc"
#include "kopt/Dialect/Kopt/KoptEnums.cpp.inc"

void KoptDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "kopt/Dialect/Kopt/KoptOps.cpp.inc"
      >();
}
