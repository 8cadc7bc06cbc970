//===- Fuse.cpp - kopt-fuse: group kopt ops into kernels ------------------===//
//
// Groups a function's kopt ops into kopt.kernel regions, each one GPU kernel.
// Chains of elementwise ops (kopt::isElementwiseOp) whose results have one
// shape become one kernel, and a row op (kopt::isRowOp: reduce, softmax,
// rmsnorm, layernorm) takes the elementwise ops over its input's shape that
// produce its input (add before RMSNorm, scale and mask before softmax; only
// for rows the row kernel keeps in registers, kMaxRegisterRow: a longer row
// loops, recomputing them in every loop) and that consume its result (a cast
// after softmax) into its kernel. In program
// order, each op joins the kernel of each producer it can fuse with (an
// elementwise producer of its own result shape; an elementwise producer of a
// row op's input; a row op whose result an elementwise op of that shape
// reads), unless the kernel would hold two row ops, or the merge would close
// a cycle between kernels (a path from one kernel to the other through a
// third), or pass max-params buffers. Broadcast operands (a row op's weight
// and bias too) and every value defined outside come in as kernel inputs; a
// value used outside its kernel is one of the kernel's outputs (a kernel may
// have several: add + RMSNorm writes the sum and the normalized rows), never
// recomputed in another kernel. A matmul takes the elementwise ops over its
// [M, N] result that read it (bias, GELU, SiLU, a residual add, SwiGLU's
// silu(gate) * up with up from another kernel) into its kernel as its
// epilogue, when the kernel keeps one output of the matmul's element type
// and the matmul's operands come from outside. A kernel holds at most one
// row op or matmul. Pack ops keep their own kernels.
// `fuse=false` gives every op its own kernel.
//
// The decision is data: each kernel records the ops it computes (`source`:
// kopt::kernelSource for one op, kopt::fusedKernelSource for several) so that
// the launch manifest lists them and a runtime can check the kernel against
// their graph's independent reference. Dead kopt ops (kopt semantics are pure)
// are dropped first, and a value that a function returns more than once gets
// a copy per repetition.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KernelSource.h"
#include "kopt/Schedule/Schedule.h"
#include "kopt/Transforms/KernelBuilders.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTFUSE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

/// kopt ops are pure: one whose results are unused (directly or through other
/// dead kopt ops) would compile into a kernel that is launched for nothing.
/// Erased in reverse order, so that a chain of dead ops goes entirely.
void eraseDeadKoptOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isa_and_nonnull<KoptDialect>(op.getDialect()) &&
        !isa<YieldOp, MainloopOp>(op) && op.use_empty() &&
        (isa<KernelOp>(op) || isPure(&op)))
      op.erase();
}

/// A function's results are its output buffers, each written by a kernel. A
/// value returned twice (e.g. after --cse) gets a copy, `kopt.cast` to its own
/// type, for each repetition, so that every output has its kernel.
void copyRepeatedResults(func::FuncOp func) {
  if (func.isExternal())
    return;
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
  if (!ret)
    return;
  DenseSet<Value> seen;
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    if (seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || !isa_and_nonnull<KoptDialect>(def->getDialect()))
      continue; // kopt-lower-to-gpu says why it cannot compile this
    operand.set(CastOp::create(b, ret.getLoc(), v.getType(), v));
  }
}

/// The fusion plan of one block: a partition of its ops into groups, each
/// group one kernel. Ops that are not kopt ops to wrap (e.g. the terminator)
/// are nodes of the dependence graph too, each alone.
class Grouping {
public:
  Grouping(Block &block, unsigned maxParams)
      : block(block), maxParams(maxParams) {
    for (Operation &op : block)
      groupOf[&op] = newGroup(&op);
  }

  /// Merges, in program order, each op's group with the groups of the
  /// producers it can fuse with (fusibleEdge), as the file comment says.
  void fuseChains(const DenseSet<Operation *> &candidates) {
    for (Operation &op : block) {
      if (!candidates.contains(&op) || !(isElementwiseOp(&op) || isRowOp(&op)))
        continue;
      // (A matmul only heads kernels: no producer joins it.)
      for (OpOperand &use : op.getOpOperands()) {
        Operation *producer = use.get().getDefiningOp();
        if (!producer || producer->getBlock() != &block ||
            !candidates.contains(producer) || !fusibleEdge(*producer, use))
          continue;
        // `a` feeds `b` and the groups form a DAG, so no path leads back
        // from `b` to `a`: a path from `a` to `b` through another group is
        // the only cycle merging them could close.
        unsigned a = groupOf[producer], b = groupOf[&op];
        if (a != b && anchors[a] + anchors[b] <= 1 &&
            !reachesIndirectly(a, b) && paramsIfMerged(a, b) <= maxParams &&
            matmulEpilogueIfMerged(a, b))
          merge(a, b);
      }
    }
  }

  /// Every group (singletons too), each in program order, in the order of
  /// their first ops.
  SmallVector<SmallVector<Operation *>> groups() const {
    SmallVector<SmallVector<Operation *>> out;
    auto before = [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    };
    for (const SmallVector<Operation *> &m : members)
      if (!m.empty()) {
        out.push_back(m);
        llvm::sort(out.back(), before);
      }
    llvm::sort(out, [](const auto &x, const auto &y) {
      return x.front()->isBeforeInBlock(y.front());
    });
    return out;
  }

private:
  unsigned newGroup(Operation *op) {
    members.push_back({op});
    anchors.push_back(isRowOp(op) || isa<MatmulOp>(op) ? 1 : 0);
    return members.size() - 1;
  }

  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<ShapedType>(v.getType()).getShape();
  }

  /// Whether `use` (an operand of its owner, the consumer) may join the
  /// kernel of `producer`, which defines it. Every such edge joins ops over
  /// one shape, so a group's elementwise ops all iterate over its row op's
  /// domain.
  static bool fusibleEdge(Operation &producer, OpOperand &use) {
    Operation *consumer = use.getOwner();
    ArrayRef<int64_t> shape = shapeOf(use.get());
    if (isElementwiseOp(&producer) && isElementwiseOp(consumer))
      return shape == shapeOf(consumer->getResult(0));
    // The row op's input (operand 0; not its weight or bias), when the row
    // kernel keeps its rows in registers: longer rows loop and would
    // recompute the producer in every loop.
    if (isElementwiseOp(&producer) && isRowOp(consumer))
      return use.getOperandNumber() == 0 && !shape.empty() &&
             shape.back() <= kMaxRegisterRow;
    // A matmul's result, read by an elementwise op of its [M, N] shape: the
    // start of its epilogue.
    if (isa<MatmulOp>(producer) && isElementwiseOp(consumer))
      return shape == shapeOf(consumer->getResult(0));
    // A row result over the row op's whole domain (softmax and the norms,
    // not a reduce's [rows] result), read by an op of that result shape.
    if (isRowOp(&producer) && isElementwiseOp(consumer))
      return shape == shapeOf(producer.getOperand(0)) &&
             shape == shapeOf(consumer->getResult(0));
    return false;
  }

  /// The groups that use a value a member of `g` defines.
  SmallVector<unsigned> successors(unsigned g) {
    SmallVector<unsigned> out;
    for (Operation *op : members[g])
      for (Operation *user : op->getUsers())
        if (Operation *u = block.findAncestorOpInBlock(*user)) {
          unsigned s = groupOf.lookup(u);
          if (s != g && !llvm::is_contained(out, s))
            out.push_back(s);
        }
    return out;
  }

  /// Whether a path leads from group `from` to group `to` through at least
  /// one other group: merging them would make a cycle.
  bool reachesIndirectly(unsigned from, unsigned to) {
    SmallVector<unsigned> work;
    DenseSet<unsigned> seen;
    for (unsigned s : successors(from))
      if (s != to && seen.insert(s).second)
        work.push_back(s);
    while (!work.empty()) {
      unsigned g = work.pop_back_val();
      if (g == to)
        return true;
      for (unsigned s : successors(g))
        if (seen.insert(s).second)
          work.push_back(s);
    }
    return false;
  }

  /// The buffers (distinct inputs, then outputs) of the kernel that groups
  /// `a` and `b` would form: values from outside it, and results used outside.
  size_t paramsIfMerged(unsigned a, unsigned b) {
    DenseSet<Operation *> inside;
    inside.insert(members[a].begin(), members[a].end());
    inside.insert(members[b].begin(), members[b].end());
    DenseSet<Value> inputs;
    size_t outputs = 0;
    for (Operation *op : inside) {
      for (Value v : op->getOperands())
        if (!inside.contains(v.getDefiningOp()))
          inputs.insert(v);
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !inside.contains(block.findAncestorOpInBlock(*user));
            }))
          ++outputs;
    }
    return inputs.size() + outputs;
  }

  /// Whether the kernel that groups `a` and `b` would form, if it holds a
  /// matmul, is one the matmul builder applies as an epilogue: the matmul's
  /// operands come from outside, and the kernel has one output, of the
  /// matmul's element type (its C, written once per element as it is
  /// stored).
  bool matmulEpilogueIfMerged(unsigned a, unsigned b) {
    DenseSet<Operation *> inside;
    inside.insert(members[a].begin(), members[a].end());
    inside.insert(members[b].begin(), members[b].end());
    MatmulOp mm;
    for (Operation *op : inside)
      if (auto m = dyn_cast<MatmulOp>(op))
        mm = m;
    if (!mm)
      return true;
    for (Value v : mm->getOperands())
      if (inside.contains(v.getDefiningOp()))
        return false;
    SmallVector<Value> outputs;
    for (Operation *op : inside)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !inside.contains(block.findAncestorOpInBlock(*user));
            }))
          outputs.push_back(r);
    return outputs.size() == 1 &&
           getElementTypeOrSelf(outputs.front().getType()) ==
               getElementTypeOrSelf(mm.getResult().getType());
  }

  void merge(unsigned from, unsigned into) {
    for (Operation *op : members[from]) {
      groupOf[op] = into;
      members[into].push_back(op);
    }
    members[from].clear();
    anchors[into] += anchors[from];
    anchors[from] = 0;
  }

  Block &block;
  unsigned maxParams;
  DenseMap<Operation *, unsigned> groupOf;
  SmallVector<SmallVector<Operation *>> members;
  SmallVector<unsigned> anchors; // row ops and matmuls per group
};

/// A unique kernel name: `base_<n>`, counting per base across the module.
std::string kernelName(StringRef base, llvm::StringMap<unsigned> &counters,
                       llvm::StringSet<> &taken) {
  std::string name;
  do
    name = (base + "_" + Twine(counters[base]++)).str();
  while (!taken.insert(name).second);
  return name;
}

/// Wraps one op into a kernel: its operands (repeated ones too) are the
/// kernel's inputs in order, its result the kernel's result.
void wrapOneOp(Operation *op, StringRef name) {
  OpBuilder b(op);
  auto kernel = KernelOp::create(b, op->getLoc(), op->getResultTypes(),
                                 b.getStringAttr(name), op->getOperands(),
                                 kernelSource(op), /*schedule=*/ScheduleAttr(),
                                 /*schedule_checked_for=*/StringAttr());
  Block *body = new Block();
  kernel.getBody().push_back(body);
  IRMapping map;
  for (Value v : op->getOperands())
    map.map(v, body->addArgument(v.getType(), op->getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  Operation *clone = inner.clone(*op, map);
  YieldOp::create(inner, op->getLoc(), clone->getResults());
  op->replaceAllUsesWith(kernel.getResults());
  op->erase();
}

/// Wraps a group of ops (in program order) into one kernel, placed at the
/// last op: the values they read from outside are its inputs (each once, in
/// order of first use), the values used outside the group its outputs (in
/// op order). Users of an output placed before the kernel are moved after it
/// by the caller's topological sort.
void wrapGroup(ArrayRef<Operation *> ops, StringRef name) {
  DenseSet<Operation *> inGroup(ops.begin(), ops.end());
  Block *block = ops.front()->getBlock();
  SmallVector<Value> inputs, outputs;
  for (Operation *op : ops) {
    for (Value v : op->getOperands())
      if (!inGroup.contains(v.getDefiningOp()) &&
          !llvm::is_contained(inputs, v))
        inputs.push_back(v);
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *user) {
            return !inGroup.contains(block->findAncestorOpInBlock(*user));
          }))
        outputs.push_back(r);
  }
  Location loc = FusedLoc::get(
      ops.front()->getContext(),
      llvm::map_to_vector(ops, [](Operation *op) { return op->getLoc(); }));
  OpBuilder b(ops.back());
  SmallVector<Type> types =
      llvm::map_to_vector(outputs, [](Value v) { return v.getType(); });
  auto kernel = KernelOp::create(b, loc, types, b.getStringAttr(name), inputs,
                                 DictionaryAttr(), /*schedule=*/ScheduleAttr(),
                                 /*schedule_checked_for=*/StringAttr());
  Block *body = new Block();
  kernel.getBody().push_back(body);
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  SmallVector<Operation *> clones;
  for (Operation *op : ops)
    clones.push_back(inner.clone(*op, map));
  YieldOp::create(inner, loc, llvm::map_to_vector(outputs, [&](Value v) {
                    return map.lookup(v);
                  }));
  kernel.setSourceAttr(fusedKernelSource(*body, clones));
  for (auto [v, r] : llvm::zip(outputs, kernel.getResults()))
    v.replaceUsesWithIf(r, [&](OpOperand &use) {
      return !inGroup.contains(block->findAncestorOpInBlock(*use.getOwner()));
    });
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

/// The base of a kernel's name: its op's for one op; for several, the first
/// four ops' names joined by `_` (a name per op would make names of
/// thousands of characters for long chains), then `_more` past four.
std::string groupBase(ArrayRef<Operation *> group) {
  if (group.size() == 1)
    return group.front()->getName().stripDialect().str();
  std::string base = llvm::join(
      llvm::map_range(group.take_front(4),
                      [](Operation *op) { return op->getName().stripDialect(); }),
      "_");
  if (group.size() > 4)
    base += "_more";
  return base;
}

struct KoptFusePass : public kopt::impl::KoptFuseBase<KoptFusePass> {
  using KoptFuseBase::KoptFuseBase;

  /// The plan file (`plan=FILE`, docs/compiler.md): `{"split": [NAME, ...]}`,
  /// each NAME a fused kernel of the default plan (as the IR after kopt-fuse
  /// and the manifest name it), which becomes one kernel per op.
  LogicalResult applyPlanFile(ModuleOp module,
                              SmallVectorImpl<SmallVector<Operation *>> &plan,
                              SmallVectorImpl<std::string> &names,
                              llvm::StringMap<unsigned> &counters,
                              llvm::StringSet<> &taken) {
    Location loc = module.getLoc();
    auto buffer = llvm::MemoryBuffer::getFile(planFile, /*IsText=*/true);
    if (!buffer)
      return emitError(loc) << "kopt-fuse: cannot read the plan file '"
                            << planFile << "': " << buffer.getError().message();
    std::string parseError;
    std::optional<nlohmann::json> j =
        schedule::parseJSON((*buffer)->getBuffer().str(), parseError);
    if (!j)
      return emitError(loc) << "kopt-fuse: the plan file '" << planFile
                            << "' is not valid JSON: " << parseError;
    if (!j->is_object())
      return emitError(loc) << "kopt-fuse: the plan file '" << planFile
                            << "' is not a JSON object";
    for (auto it = j->begin(); it != j->end(); ++it)
      if (it.key() != "split")
        return emitError(loc)
               << "kopt-fuse: the plan file '" << planFile
               << "' has an unknown key '" << it.key()
               << "' (known: \"split\", a list of kernel names)";
    llvm::StringSet<> split;
    if (j->contains("split")) {
      const nlohmann::json &list = (*j)["split"];
      if (!list.is_array() ||
          !llvm::all_of(list, [](const nlohmann::json &x) {
            return x.is_string();
          }))
        return emitError(loc) << "kopt-fuse: the plan file '" << planFile
                              << "': \"split\" must be a list of kernel "
                                 "names";
      for (const nlohmann::json &x : list)
        split.insert(x.get<std::string>());
    }
    SmallVector<std::string> fused;
    for (auto [group, name] : llvm::zip(plan, names))
      if (group.size() > 1)
        fused.push_back(name);
    for (const auto &entry : split)
      if (!llvm::is_contained(fused, entry.getKey()))
        return emitError(loc)
               << "kopt-fuse: the plan file '" << planFile << "' splits '"
               << entry.getKey()
               << "', which is not a fused kernel of the default plan ("
               << (fused.empty() ? std::string("it has none")
                                 : "its fused kernels: " +
                                       llvm::join(fused, ", "))
               << ")";
    SmallVector<SmallVector<Operation *>> newPlan;
    SmallVector<std::string> newNames;
    for (auto [group, name] : llvm::zip(plan, names)) {
      if (!split.contains(name)) {
        newPlan.push_back(group);
        newNames.push_back(name);
        continue;
      }
      for (Operation *op : group) {
        newPlan.push_back({op});
        newNames.push_back(
            kernelName(op->getName().stripDialect(), counters, taken));
      }
    }
    plan = std::move(newPlan);
    names = std::move(newNames);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      copyRepeatedResults(func);
      for (Block &block : func.getBody())
        eraseDeadKoptOps(block);
    }
    llvm::StringMap<unsigned> counters;
    // Names of kernels already in the module are taken.
    llvm::StringSet<> taken;
    module.walk([&](KernelOp k) { taken.insert(k.getSymName()); });
    // The kopt ops to wrap, by block, in walk order.
    llvm::MapVector<Block *, DenseSet<Operation *>> candidates;
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<KoptDialect>(op->getDialect()) &&
          !isa<KernelOp, YieldOp, MainloopOp, LaunchOp>(op) &&
          !op->getParentOfType<KernelOp>() &&
          !op->getParentOfType<MainloopOp>()) {
        ops.push_back(op);
        candidates[op->getBlock()].insert(op);
      }
    });
    // The plan: the group of each op, in the order of the groups' first ops.
    SmallVector<SmallVector<Operation *>> plan;
    if (!fuse) {
      for (Operation *op : ops)
        plan.push_back({op});
    } else {
      DenseMap<Operation *, SmallVector<Operation *>> groupAt;
      for (auto &[block, set] : candidates) {
        Grouping grouping(*block, maxParams);
        grouping.fuseChains(set);
        for (SmallVector<Operation *> &g : grouping.groups())
          if (set.contains(g.front()))
            groupAt[g.front()] = std::move(g);
      }
      for (Operation *op : ops)
        if (auto it = groupAt.find(op); it != groupAt.end())
          plan.push_back(std::move(it->second));
    }
    // Each group's name, in plan order (a one-op kernel `<op>_<n>`, a fused
    // one after its first four ops), then the plan file's overrides: a split
    // kernel becomes one kernel per op under fresh names, every other kernel
    // keeps its name.
    SmallVector<std::string> names;
    for (ArrayRef<Operation *> group : plan)
      names.push_back(kernelName(groupBase(group), counters, taken));
    if (!planFile.empty() && failed(applyPlanFile(module, plan, names,
                                                  counters, taken)))
      return signalPassFailure();
    SetVector<Block *> reordered;
    for (auto [group, name] : llvm::zip(plan, names)) {
      if (group.size() == 1) {
        wrapOneOp(group.front(), name);
        continue;
      }
      reordered.insert(group.front()->getBlock());
      wrapGroup(group, name);
    }
    // A fused kernel sits at its last op; users of its outputs placed
    // between its ops move after it (the plan has no cycles).
    for (Block *block : reordered)
      if (!sortTopologically(block)) {
        module.emitError("kopt-fuse: the kernels of a block depend on each "
                         "other in a cycle");
        return signalPassFailure();
      }
  }
};

} // namespace
