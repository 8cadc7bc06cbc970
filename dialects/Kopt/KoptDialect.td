//===- KoptDialect.td - the kopt dialect ---------------------*- tablegen -*-===//
//
// The kopt dialect: tensor operators with exact semantics (docs/ops.md). Each op's
// semantics is defined once, by its lowering to linalg (passes/LowerToLinalg.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_DIALECT_TD
#define KOPT_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Kopt_Dialect : Dialect {
  let name = "kopt";
  let cppNamespace = "::kopt";
  let summary = "Tensor operators compiled to Hopper GPU kernels";
  let description = [{
    Operators on statically shaped ranked tensors of f32, f16 and bf16. Half-precision
    operands are computed in f32 and rounded to the result type once (as PyTorch's
    eager kernels do); matmul accumulates in f32.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Adds the attributes (KoptAttrs.cpp, where their storage is complete).
    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Kopt_FloatType : AnyTypeOf<[F32, F16, BF16]>;
def Kopt_Tensor : Type<
    And<[StaticShapeTensorOf<[F32, F16, BF16]>.predicate,
         CPred<"!::llvm::cast<::mlir::RankedTensorType>($_self).getEncoding()">]>,
    "statically shaped tensor of f32, f16 or bf16 without encoding",
    "::mlir::RankedTensorType">;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Kopt_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let cppNamespace = "::kopt";
}

def Kopt_ReduceKind : I32EnumAttr<"ReduceKind",
    "the combiner of kopt.reduce", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Mean", 2, "mean">
    ]> {
  let cppNamespace = "::kopt";
}

#endif // KOPT_DIALECT_TD
