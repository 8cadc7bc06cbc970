//===- KoptOps.cpp - verifiers of the kopt ops ----------------------------===//
//
// Every verifier names the operand and the shapes or types that disagree; the
// lit tests in test/Dialect/Kopt/invalid.mlir cover each message.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KernelSource.h"
#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Manifest/Manifest.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace kopt;

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(shape, os, "x");
  os << "]";
  return s;
}

FailureOr<SmallVector<int64_t>> kopt::broadcastShapes(ArrayRef<int64_t> lhs,
                                                      ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align at the trailing dimension.
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return failure();
    out[i] = l == 1 ? r : l;
  }
  return out;
}

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

//===----------------------------------------------------------------------===//
// Attributes of every op
//===----------------------------------------------------------------------===//

LogicalResult kopt::verifyKnownAttributes(Operation *op) {
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    auto [prefix, rest] = name.split('.');
    // `dialect.name`: another dialect's (or pass's) discardable attribute,
    // kept; `kopt.` names none on kopt ops.
    if (!rest.empty() && !prefix.empty() && prefix != "kopt")
      continue;
    SmallVector<StringRef> known;
    for (StringAttr n : op->getName().getAttributeNames())
      if (n.getValue() != "operandSegmentSizes" &&
          n.getValue() != "resultSegmentSizes")
        known.push_back(n.getValue());
    InFlightDiagnostic diag = op->emitOpError("has an unknown attribute '")
                              << name << "'";
    // The closest attribute of the op by edit distance, when close.
    StringRef best;
    unsigned bestDistance = 3;
    for (StringRef k : known)
      if (unsigned d = name.edit_distance(k); d < bestDistance)
        best = k, bestDistance = d;
    if (!best.empty())
      diag << "; did you mean '" << best << "'?";
    diag << " (" << op->getName() << " takes ";
    if (known.empty())
      diag << "no attributes";
    else
      diag << llvm::join(known, ", ");
    diag << "; attributes of other dialects, `dialect.name`, are kept)";
    return diag;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType a = tensorType(getA()), b = tensorType(getB()),
                   c = tensorType(getResult());
  if (a.getRank() != 2 || b.getRank() != 2 || c.getRank() != 2)
    return emitOpError("expects 2-D operands and result, got ranks ")
           << a.getRank() << ", " << b.getRank() << " -> " << c.getRank();
  if (a.getElementType() != b.getElementType())
    return emitOpError("expects operands of one element type, got ")
           << a.getElementType() << " and " << b.getElementType();
  int64_t m = getTransposeA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t ka = getTransposeA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeB() ? b.getDimSize(0) : b.getDimSize(1);
  if (ka != kb)
    return emitOpError("contraction dimensions differ: A is ")
           << m << "x" << ka << " and B is " << kb << "x" << n
           << " (after the transposes)";
  if (c.getDimSize(0) != m || c.getDimSize(1) != n)
    return emitOpError("result shape ")
           << shapeStr(c.getShape()) << " does not match the product's "
           << shapeStr({m, n});
  if (getTf32() && !a.getElementType().isF32())
    return emitOpError("tf32 applies to f32 operands, got ")
           << a.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinary(Operation *op) {
  RankedTensorType l = tensorType(op->getOperand(0)),
                   r = tensorType(op->getOperand(1)),
                   res = tensorType(op->getResult(0));
  if (l.getElementType() != r.getElementType() ||
      l.getElementType() != res.getElementType())
    return op->emitOpError(
               "expects one element type for operands and result, got ")
           << l.getElementType() << ", " << r.getElementType() << " -> "
           << res.getElementType();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(l.getShape(), r.getShape());
  if (failed(shape))
    return op->emitOpError("operand shapes ")
           << shapeStr(l.getShape()) << " and " << shapeStr(r.getShape())
           << " are not broadcast-compatible";
  if (ArrayRef<int64_t>(*shape) != res.getShape())
    return op->emitOpError("result shape ")
           << shapeStr(res.getShape()) << " is not the broadcast shape "
           << shapeStr(*shape);
  return success();
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }
LogicalResult MaxOp::verify() { return verifyBinary(*this); }
LogicalResult MinOp::verify() { return verifyBinary(*this); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (tensorType(getInput()).getShape() != tensorType(getResult()).getShape())
    return emitOpError("input shape ")
           << shapeStr(tensorType(getInput()).getShape())
           << " differs from result shape "
           << shapeStr(tensorType(getResult()).getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// PackOp
//===----------------------------------------------------------------------===//

LogicalResult PackOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getRank() != 2 || out.getRank() != 2)
    return emitOpError("expects a 2-D input and result, got ranks ")
           << in.getRank() << " -> " << out.getRank();
  if (in.getElementType() != out.getElementType())
    return emitOpError("copies without conversion: the input's element type ")
           << in.getElementType() << " differs from the result's "
           << out.getElementType();
  SmallVector<int64_t> src(in.getShape());
  if (getTranspose())
    std::swap(src[0], src[1]);
  if (out.getDimSize(0) < src[0] || out.getDimSize(1) < src[1])
    return emitOpError("result shape ")
           << shapeStr(out.getShape()) << " is smaller than the "
           << (getTranspose() ? "transposed input's " : "input's ")
           << shapeStr(src) << "; pack only pads";
  return success();
}

//===----------------------------------------------------------------------===//
// Row operators
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getRank() < 1)
    return emitOpError("expects an input of rank 1 or more");
  if (in.getShape().drop_back() != out.getShape())
    return emitOpError("result shape ")
           << shapeStr(out.getShape())
           << " must be the input shape without its last dimension, "
           << shapeStr(in.getShape().drop_back());
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (tensorType(getInput()).getRank() < 1)
    return emitOpError("expects an input of rank 1 or more");
  return success();
}

/// Checks an optional per-feature parameter (weight or bias) of a norm.
static LogicalResult verifyNormParam(Operation *op, Value input, Value param,
                                     StringRef name) {
  if (!param)
    return success();
  RankedTensorType in = tensorType(input), p = tensorType(param);
  if (in.getRank() < 1)
    return op->emitOpError("expects an input of rank 1 or more");
  if (p.getRank() != 1 || p.getDimSize(0) != in.getShape().back())
    return op->emitOpError()
           << name << " must have shape [" << in.getShape().back()
           << "] (the input's last dimension), got " << shapeStr(p.getShape());
  if (p.getElementType() != in.getElementType())
    return op->emitOpError()
           << name << " element type " << p.getElementType()
           << " differs from the input's " << in.getElementType();
  return success();
}

static LogicalResult verifyNormInput(Operation *op, Value input, float eps) {
  if (tensorType(input).getRank() < 1)
    return op->emitOpError("expects an input of rank 1 or more");
  // The launch manifest's rule, stated once (kopt/Manifest/Manifest.h).
  if (std::optional<std::string> error = kopt::manifest::epsError(eps))
    return op->emitOpError(*error);
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyNormInput(*this, getInput(), getEps().convertToFloat())))
    return failure();
  return verifyNormParam(*this, getInput(), getWeight(), "weight");
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormInput(*this, getInput(), getEps().convertToFloat())) ||
      failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyNormParam(*this, getInput(), getBias(), "bias");
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

/// Names of an op's operands in the launch manifest (docs/manifest.md).
static SmallVector<StringRef> operandNames(Operation *op) {
  if (isa<MatmulOp>(op))
    return {"a", "b"};
  if (isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(op))
    return {"lhs", "rhs"};
  if (auto norm = dyn_cast<RMSNormOp>(op)) {
    if (norm.getWeight())
      return {"input", "weight"};
    return {"input"};
  }
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    SmallVector<StringRef> names = {"input"};
    if (norm.getWeight())
      names.push_back("weight");
    if (norm.getBias())
      names.push_back("bias");
    return names;
  }
  return {"input"};
}

/// The op's attributes as the manifest shows them: unit attributes become
/// booleans, enums their keyword, so that the JSON needs no MLIR to read.
static DictionaryAttr sourceAttrs(Operation *op) {
  Builder b(op->getContext());
  SmallVector<NamedAttribute> attrs;
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    attrs.push_back(
        b.getNamedAttr("transpose_a", b.getBoolAttr(mm.getTransposeA())));
    attrs.push_back(
        b.getNamedAttr("transpose_b", b.getBoolAttr(mm.getTransposeB())));
    if (mm.getTf32())
      attrs.push_back(b.getNamedAttr("tf32", b.getBoolAttr(true)));
  } else if (auto pack = dyn_cast<PackOp>(op)) {
    attrs.push_back(
        b.getNamedAttr("transpose", b.getBoolAttr(pack.getTranspose())));
  } else if (auto gelu = dyn_cast<GeluOp>(op)) {
    attrs.push_back(b.getNamedAttr(
        "approximate",
        b.getStringAttr(stringifyGeluApproximation(gelu.getApproximate()))));
  } else if (auto red = dyn_cast<ReduceOp>(op)) {
    attrs.push_back(b.getNamedAttr(
        "kind", b.getStringAttr(stringifyReduceKind(red.getKind()))));
  } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
    attrs.push_back(b.getNamedAttr("eps", norm.getEpsAttr()));
  } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
    attrs.push_back(b.getNamedAttr("eps", norm.getEpsAttr()));
  }
  return b.getDictionaryAttr(attrs);
}

DictionaryAttr kopt::kernelSource(Operation *op) {
  Builder b(op->getContext());
  SmallVector<Attribute> params;
  for (StringRef n : operandNames(op))
    params.push_back(b.getStringAttr(n));
  params.push_back(b.getStringAttr("result"));
  return b.getDictionaryAttr({
      b.getNamedAttr("name", b.getStringAttr(op->getName().stripDialect())),
      b.getNamedAttr("attrs", sourceAttrs(op)),
      b.getNamedAttr("params", b.getArrayAttr(params)),
  });
}

bool kopt::isElementwiseOp(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, ExpOp, NegOp, AbsOp,
             SqrtOp, RsqrtOp, TanhOp, LogOp, Log1pOp, SigmoidOp, ReluOp, SiluOp,
             GeluOp, CastOp>(op);
}

bool kopt::isRowOp(Operation *op) {
  return isa<ReduceOp, SoftmaxOp, RMSNormOp, LayerNormOp>(op);
}

DictionaryAttr kopt::fusedKernelSource(Block &body, ArrayRef<Operation *> ops) {
  Builder b(body.getParent()->getContext());
  DenseMap<Value, StringAttr> names;
  SmallVector<Attribute> params;
  for (BlockArgument arg : body.getArguments()) {
    StringAttr n = b.getStringAttr("in" + Twine(arg.getArgNumber()));
    names[arg] = n;
    params.push_back(n);
  }
  Operation *term = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(term->getOperands())) {
    StringAttr n = b.getStringAttr("out" + Twine(i));
    names.try_emplace(v, n);
    params.push_back(n);
  }
  SmallVector<Attribute> opAttrs, values;
  for (Operation *op : ops) {
    SmallVector<Attribute> operands, results;
    for (Value v : op->getOperands()) {
      StringAttr n = names.lookup(v);
      operands.push_back(n ? n : b.getStringAttr("<outside>"));
    }
    for (Value r : op->getResults()) {
      auto [it, inserted] =
          names.try_emplace(r, b.getStringAttr("t" + Twine(values.size())));
      if (inserted)
        values.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("name", it->second),
             b.getNamedAttr("type", TypeAttr::get(r.getType()))}));
      results.push_back(it->second);
    }
    opAttrs.push_back(b.getDictionaryAttr({
        b.getNamedAttr("name", b.getStringAttr(op->getName().stripDialect())),
        b.getNamedAttr("attrs", sourceAttrs(op)),
        b.getNamedAttr("operands", b.getArrayAttr(operands)),
        b.getNamedAttr("results", b.getArrayAttr(results)),
    }));
  }
  return b.getDictionaryAttr({
      b.getNamedAttr("ops", b.getArrayAttr(opAttrs)),
      b.getNamedAttr("params", b.getArrayAttr(params)),
      b.getNamedAttr("values", b.getArrayAttr(values)),
  });
}

LogicalResult KernelOp::verify() {
  // The name becomes the PTX entry: a C identifier.
  StringRef name = getSymName();
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_') ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return emitOpError("name '")
           << name << "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*): it "
           << "becomes the kernel's PTX entry name";
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " differs from its input's "
             << input.getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError("yielded types differ from the result types");
  if (StringAttr chip = getScheduleCheckedForAttr()) {
    if (!getScheduleAttr())
      return emitOpError("has schedule_checked_for but no schedule");
    // Only kopt-select-schedule sets it, for a chip it knows.
    if (!schedule::Target::forChip(chip.getValue().str()))
      return emitOpError("schedule_checked_for names an unknown chip '")
             << chip.getValue() << "' (kopt-select-schedule sets it)";
  }
  return success();
}

LogicalResult KernelOp::verifyRegions() {
  DictionaryAttr source = getSourceAttr();
  if (!source)
    return success();
  // Runs after the body's ops are verified. While the body holds kopt ops,
  // `source` must describe them exactly: the launch manifest (and kopt-run's
  // reference check) trusts it. After kopt-lower-to-linalg the body holds
  // linalg ops, which `source` was checked against while they were still the
  // kopt op.
  Block &body = getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Operation *> koptOps;
  for (Operation &op : body.without_terminator())
    if (isa_and_nonnull<KoptDialect>(op.getDialect()))
      koptOps.push_back(&op);
  if (koptOps.empty())
    return success();
  // Several ops: `source` lists them (kopt::fusedKernelSource).
  if (source.get("ops")) {
    if (koptOps.size() != llvm::range_size(body.without_terminator()))
      return emitOpError("source lists ops, but the body computes ops of "
                         "other dialects too; a kernel with a source holds "
                         "kopt ops and its kopt.yield");
    DictionaryAttr expected = fusedKernelSource(body, koptOps);
    if (source != expected)
      return emitOpError("source ")
             << source << " disagrees with the body, which computes "
             << expected;
    return success();
  }
  Operation *op = koptOps.front();
  StringRef opName = op->getName().stripDialect();
  if (koptOps.size() > 1 || !llvm::hasSingleElement(body.without_terminator()))
    return emitOpError("source describes one op, but the body computes ")
           << llvm::range_size(body.without_terminator()) << " ops; a kernel "
           << "with a source holds one kopt op and its kopt.yield, or lists "
           << "its ops (`ops`)";
  auto name = source.getAs<StringAttr>("name");
  if (!name || name.getValue() != opName)
    return emitOpError("source names op '")
           << (name ? name.getValue() : StringRef("<none>"))
           << "' but the body computes 'kopt." << opName << "'";
  auto params = source.getAs<ArrayAttr>("params");
  size_t expected = op->getNumOperands() + op->getNumResults();
  if (!params || params.size() != expected)
    return emitOpError("source needs ")
           << expected << " parameter names (operands, then result) for 'kopt."
           << opName << "'";
  // The manifest names the kernel's parameters (its inputs, then its
  // results) by `params`, so operand i of the op must be input i.
  if (op->getNumOperands() != getInputs().size())
    return emitOpError("'kopt.")
           << opName << "' has " << op->getNumOperands()
           << " operands but the kernel has " << getInputs().size()
           << " inputs; the source describes the kernel's parameters in order";
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner() != &body ||
        getInputs()[arg.getArgNumber()] != getInputs()[i])
      return emitOpError("operand #")
             << i << " of 'kopt." << opName << "' is not the kernel's input #"
             << i << "; the source describes the kernel's parameters in order";
  }
  if (yield.getValues() != op->getResults())
    return emitOpError("yields values other than the results of 'kopt.")
           << opName << "'";
  DictionaryAttr expectedSource = kernelSource(op);
  if (source != expectedSource)
    return emitOpError("source ")
           << source << " disagrees with the body's 'kopt." << opName
           << "', which is " << expectedSource;
  return success();
}

#define GET_OP_CLASSES
#include "kopt/Dialect/Kopt/KoptOps.cpp.inc"

//===----------------------------------------------------------------------===//
// MainloopOp
//===----------------------------------------------------------------------===//

LogicalResult MainloopOp::verify() {
  schedule::MatmulSchedule s = getSchedule().getSchedule();
  if (s.instruction != schedule::Instruction::MmaSync &&
      s.instruction != schedule::Instruction::Wgmma)
    return emitOpError("stages operand tiles for tensor-core schedules only "
                       "(mma_sync, wgmma)");
  ArrayRef<Attribute> maps = getIndexingMaps().getValue();
  if (maps.size() != 2 || !llvm::all_of(maps, [](Attribute a) {
        auto m = dyn_cast<AffineMapAttr>(a);
        return m && m.getValue().getNumDims() == 3 &&
               m.getValue().getNumResults() == 2 &&
               m.getValue().isProjectedPermutation();
      }))
    return emitOpError("needs two indexing maps (m, n, k) -> 2 indices, "
                       "projected permutations (A's, then B's)");
  Type elt = cast<MemRefType>(getA().getType()).getElementType();
  for (Value v : {getA(), getB()}) {
    auto t = cast<MemRefType>(v.getType());
    if (t.getRank() != 2 || !t.hasStaticShape())
      return emitOpError("operands must be static 2-D memrefs, got ") << t;
    if (t.getElementType() != elt)
      return emitOpError("A and B must have the same element type, got ")
             << elt << " and " << t.getElementType();
  }
  bool wgmma = s.instruction == schedule::Instruction::Wgmma;
  if (!(elt.isF16() || elt.isBF16() || (wgmma && elt.isF32())))
    return emitOpError("operands must be f16 or bf16 (or f32 for wgmma's "
                       "TF32), got ")
           << elt;
  if (getInit().empty())
    return emitOpError("needs the accumulators as iter_args");
  if (std::optional<int64_t> offset = getBarrierOffset();
      offset && (*offset < 0 || *offset % 8 != 0))
    return emitOpError("barrier_offset must be a non-negative multiple of 8 "
                       "bytes, got ")
           << *offset;
  bool tma = s.copy == schedule::CopyEngine::TMA;
  if (getTensorMaps().size() != (tma ? 2u : 0u))
    return emitOpError("takes ") << (tma ? "two tensor maps (copy = tma)"
                                         : "no tensor maps (copy is not tma)");
  if (tma != getBarrierOffset().has_value())
    return emitOpError("needs barrier_offset exactly when copy = tma");
  Block &body = getBody().front();
  if (body.getNumArguments() != 2 + getInit().size())
    return emitOpError("body takes the two staged tiles and ")
           << getInit().size() << " accumulators, has "
           << body.getNumArguments() << " arguments";
  for (unsigned i = 0; i < 2; ++i) {
    auto t = dyn_cast<MemRefType>(body.getArgument(i).getType());
    auto space =
        t ? dyn_cast_or_null<IntegerAttr>(t.getMemorySpace()) : IntegerAttr();
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity() || !space ||
        space.getInt() != 3)
      return emitOpError("body argument ")
             << i << " must be a static shared-memory (address space 3) "
             << "memref with the identity layout";
    if (t.getElementType() != elt)
      return emitOpError("body argument ")
             << i << " must hold the operands' element type " << elt;
    // [rows][block_k + pad] (mma.sync) or [block_k / r][rows][r] (wgmma).
    if (t.getRank() != (wgmma ? 3 : 2))
      return emitOpError("body argument ")
             << i << " must be a " << (wgmma ? "3-D" : "2-D") << " tile for "
             << (wgmma ? "wgmma" : "mma_sync") << ", got " << t;
  }
  for (auto [arg, init] :
       llvm::zip(body.getArguments().drop_front(2), getInit()))
    if (arg.getType() != init.getType())
      return emitOpError("accumulator argument type ")
             << arg.getType() << " differs from its init's " << init.getType();
  if (getInit().getTypes() != getResults().getTypes())
    return emitOpError("result types differ from the init types");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError("yielded types differ from the result types");
  return success();
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verify() {
  if (static_cast<uint64_t>(getNumInputs()) + getNumOutputs() >
      getArgs().size())
    return emitOpError("has ")
           << getArgs().size() << " args, fewer than num_inputs ("
           << getNumInputs() << ") + num_outputs (" << getNumOutputs() << ")";
  if (!manifest::parseKernelClass(getKernelClass()))
    return emitOpError("unknown kernel_class '") << getKernelClass() << "'";
  if (std::optional<ArrayRef<int32_t>> cluster = getClusterSize()) {
    // CUDA C++ Programming Guide, "Thread Block Clusters": at most 8 blocks
    // (the portable size), and the grid a multiple of the cluster.
    int64_t blocks = 1;
    for (int32_t d : *cluster)
      blocks *= d;
    if (cluster->size() != 3 ||
        llvm::any_of(*cluster, [](int32_t d) { return d < 1; }) || blocks > 8)
      return emitOpError("cluster_size must be 3 positive sizes (x, y, z) "
                         "of at most 8 blocks in all");
    for (auto [i, g] : llvm::enumerate(getGridSizes()))
      if (std::optional<int64_t> c = getConstantIntValue(g);
          c && *c % (*cluster)[i] != 0)
        return emitOpError("grid size ")
               << *c << " along "
               << "xyz"[i] << " is not a multiple of the cluster size "
               << (*cluster)[i];
  }
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  // Resolved through `symbols` (one table per module, built once), so a
  // module's verification is linear in its launches.
  SymbolRefAttr ref = getKernel();
  Operation *container = symbols.lookupNearestSymbolFrom(
      getOperation(), FlatSymbolRefAttr::get(ref.getRootReference()));
  if (!container)
    return emitOpError("kernel container '")
           << ref.getRootReference().getValue() << "' is not defined";
  if (ref.getNestedReferences().size() != 1)
    return emitOpError("expects a kernel reference @container::@kernel, got ")
           << ref;
  // A serialized container (gpu.binary) has no symbols left to check; any
  // other op than a gpu.module cannot hold kernels.
  StringRef kind = container->getName().getStringRef();
  if (kind == "gpu.binary")
    return success();
  if (kind != "gpu.module")
    return emitOpError("kernel container '")
           << ref.getRootReference().getValue() << "' is a '" << kind
           << "', not a gpu.module or gpu.binary";
  Operation *callee = symbols.lookupSymbolIn(container, ref.getLeafReference());
  auto fn = dyn_cast_or_null<FunctionOpInterface>(callee);
  if (!fn || !callee->hasAttr("gpu.kernel"))
    return emitOpError("'")
           << ref << "' does not name a kernel function (a gpu.func with "
           << "the `kernel` attribute)";
  // Types are checked against a gpu.func; once it is lowered to an llvm.func
  // (memrefs expanded into pointers and sizes) the args stay as they were.
  if (callee->getName().getStringRef() != "gpu.func")
    return success();
  ArrayRef<Type> params = fn.getArgumentTypes();
  if (params.size() != getArgs().size())
    return emitOpError("passes ")
           << getArgs().size() << " args to '"
           << ref.getLeafReference().getValue() << "', which has "
           << params.size() << " parameters";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getArgs(), params)))
    if (std::get<0>(pair).getType() != std::get<1>(pair))
      return emitOpError("arg #")
             << i << " has type " << std::get<0>(pair).getType()
             << ", the kernel's parameter has type " << std::get<1>(pair);
  return success();
}
