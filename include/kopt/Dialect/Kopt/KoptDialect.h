//===- KoptDialect.h - the kopt dialect -------------------------*- C++ -*-===//
//
// Public header of the kopt dialect: tensor operators on static shapes of f32,
// f16 and bf16 (docs/ops.md).
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_DIALECT_KOPT_KOPTDIALECT_H
#define KOPT_DIALECT_KOPT_KOPTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kopt/Schedule/Schedule.h"

#include "kopt/Dialect/Kopt/KoptEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kopt/Dialect/Kopt/KoptAttrs.h.inc"

#include "kopt/Dialect/Kopt/KoptDialect.h.inc"

namespace kopt {
/// Fails, naming the attribute, when `op` (a kopt op) carries a discardable
/// attribute without a dialect prefix (a misspelled or unknown attribute of
/// the op) or with the `kopt.` prefix (the dialect defines none). Attributes
/// of other dialects (`dialect.name`) pass: other passes may attach them.
mlir::LogicalResult verifyKnownAttributes(mlir::Operation *op);

/// The trait of every kopt op (Kopt_KnownAttributesOnly in KoptOps.td).
template <typename ConcreteType>
class KnownAttributesOnly
    : public mlir::OpTrait::TraitBase<ConcreteType, KnownAttributesOnly> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyKnownAttributes(op);
  }
};
} // namespace kopt

#define GET_OP_CLASSES
#include "kopt/Dialect/Kopt/KoptOps.h.inc"

namespace kopt {
/// The NumPy broadcast of two static shapes, or failure when a pair of
/// dimensions differs and neither is 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// The `source` of a kernel computing `op` alone, as kopt-fuse records it and
/// the launch manifest shows it: `{name = "<op without kopt.>", attrs = {...},
/// params = [<operand names>..., "result"]}` (docs/ops.md). Unit attributes
/// become booleans, enums their keyword, `eps` its f32.
mlir::DictionaryAttr kernelSource(mlir::Operation *op);
} // namespace kopt

#endif // KOPT_DIALECT_KOPT_KOPTDIALECT_H
