//===- SelectSchedule.cpp - kopt-select-schedule --------------------------===//
//
// Schedule selection, kept apart from the passes that apply a schedule: this
// pass only decides which #kopt.schedule each matmul kernel gets (file, an
// attribute already there, or the default heuristic) and checks it, the only
// place that does either; it marks the schedule checked for its chip
// (`schedule_checked_for`), and the kernel builder (kopt-tile) applies a
// schedule so marked without checking it again.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Database.h"
#include "kopt/Search/Task.h"
#include "kopt/Transforms/Passes.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace kopt {
#define GEN_PASS_DEF_KOPTSELECTSCHEDULE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;
namespace sched = kopt::schedule;
using nlohmann::json;

namespace {

std::optional<sched::DType> dtypeOf(Type t) {
  Type elt = cast<ShapedType>(t).getElementType();
  if (elt.isF32())
    return sched::DType::F32;
  if (elt.isF16())
    return sched::DType::F16;
  if (elt.isBF16())
    return sched::DType::BF16;
  return std::nullopt;
}

/// The matmul a kernel computes, or null when it computes none.
MatmulOp matmulOf(KernelOp kernel) {
  MatmulOp found;
  kernel.getBody().walk([&](MatmulOp op) { found = op; });
  return found;
}

sched::MatmulWorkload workloadOf(MatmulOp op) {
  auto a = cast<RankedTensorType>(op.getA().getType());
  auto c = cast<RankedTensorType>(op.getResult().getType());
  sched::MatmulWorkload w;
  w.m = c.getDimSize(0);
  w.n = c.getDimSize(1);
  w.k = op.getTransposeA() ? a.getDimSize(0) : a.getDimSize(1);
  // The op verifier admits f32, f16 and bf16 only.
  w.a = *dtypeOf(op.getA().getType());
  w.b = *dtypeOf(op.getB().getType());
  w.c = *dtypeOf(op.getResult().getType());
  w.aKContiguous = !op.getTransposeA();
  w.bKContiguous = op.getTransposeB();
  w.tf32 = op.getTf32();
  return w;
}

/// At most this many errors are reported; the rest are counted. A large
/// schedule file with bad entries would otherwise print one error per entry.
constexpr unsigned kMaxErrors = 20;

/// Hands out diagnostics until kMaxErrors are reported, then inactive ones
/// (which drop what is streamed into them) while counting them.
class ErrorBudget {
public:
  InFlightDiagnostic error(Location loc) {
    if (!take())
      return InFlightDiagnostic();
    return emitError(loc);
  }
  InFlightDiagnostic opError(Operation *op) {
    if (!take())
      return InFlightDiagnostic();
    return op->emitOpError();
  }
  /// "... and N more errors" at `loc` when any were dropped.
  void summarize(Location loc) const {
    if (dropped)
      emitError(loc) << "... and " << dropped << " more error"
                     << (dropped == 1 ? "" : "s")
                     << " (kopt-select-schedule reports the first "
                     << kMaxErrors << ")";
  }

private:
  bool take() {
    if (reported < kMaxErrors) {
      ++reported;
      return true;
    }
    ++dropped;
    return false;
  }
  unsigned reported = 0;
  uint64_t dropped = 0;
};

struct KoptSelectSchedulePass
    : public kopt::impl::KoptSelectScheduleBase<KoptSelectSchedulePass> {
  using Base::Base;

  /// The schedule file: either one schedule for every kernel (`all`) or
  /// entries by kernel name, workload key or "*".
  struct File {
    std::optional<json> all;
    json entries = json::object();
  };

  FailureOr<File> readFile(Location loc) {
    File f;
    auto buffer = llvm::MemoryBuffer::getFile(scheduleFile, /*IsText=*/true);
    if (!buffer) {
      emitError(loc) << "cannot read the schedule file '" << scheduleFile
                     << "': " << buffer.getError().message();
      return failure();
    }
    std::string parseError;
    std::optional<json> parsed =
        sched::parseJSON((*buffer)->getBuffer().str(), parseError);
    if (!parsed) {
      emitError(loc) << "the schedule file '" << scheduleFile
                     << "' is not valid JSON: " << parseError;
      return failure();
    }
    json j = std::move(*parsed);
    if (!j.is_object()) {
      emitError(loc) << "the schedule file '" << scheduleFile
                     << "' is not a JSON object";
      return failure();
    }
    // A bare schedule has parameter names as keys; entries map kernel names,
    // workload keys or "*" to schedule objects.
    bool anyParameter = false, anyEntry = false;
    for (auto it = j.begin(); it != j.end(); ++it)
      (sched::isParameterName(it.key()) ? anyParameter : anyEntry) = true;
    if (anyParameter) {
      for (auto it = j.begin(); it != j.end(); ++it)
        if (it.value().is_object()) {
          emitError(loc) << "the schedule file '" << scheduleFile
                         << "' mixes schedule parameters with kernel entries "
                            "(entry '"
                         << sched::abbreviate(it.key())
                         << "'); write one schedule object, or an object of "
                            "schedules keyed by kernel name, workload key or "
                            "\"*\"";
          return failure();
        }
      f.all = std::move(j);
      return f;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!it.value().is_object()) {
        emitError(loc) << "the schedule file '" << scheduleFile << "': '"
                       << sched::abbreviate(it.key())
                       << "' is not a schedule parameter, and as a kernel "
                          "entry its value must be a schedule object, got "
                       << it.value().type_name();
        return failure();
      }
    (void)anyEntry;
    f.entries = std::move(j);
    return f;
  }

  /// The op chain of a kernel as the manifest names it ("matmul",
  /// "matmul+add+gelu"): the kopt ops of its body, in order.
  static std::string opChain(KernelOp kernel) {
    std::string chain;
    kernel.getBody().walk([&](Operation *op) {
      if (op->getDialect() != kernel->getDialect() || isa<KernelOp>(op) ||
          op->hasTrait<OpTrait::IsTerminator>())
        return;
      StringRef name = op->getName().stripDialect();
      chain += (chain.empty() ? "" : "+") + name.str();
    });
    return chain;
  }

  /// Sets `s` to the database's best schedule of `key` (this kernel's op
  /// chain first, then any) when there is a usable one, and returns where
  /// the schedule came from, for the remark. A database error fails.
  FailureOr<std::string> scheduleFromDatabase(search::Database &db,
                                              KernelOp kernel,
                                              const sched::MatmulWorkload &w,
                                              const std::string &key,
                                              const sched::Target &target,
                                              sched::MatmulSchedule &s) {
    const std::string version = KOPT_VERSION;
    std::string ops = opChain(kernel);
    std::optional<search::TrialRecord> best;
    for (const std::string &chain : {ops, std::string()}) {
      auto found = db.best(key, chain, version);
      if (!found.ok()) {
        kernel.emitOpError() << "tuning database '" << tuningDb
                             << "': " << found.error();
        return failure();
      }
      if (*found) {
        best = **found;
        break;
      }
    }
    std::string none = "the default heuristic (the tuning database '" +
                       tuningDb + "' has no usable GPU record of it from kopt " +
                       version;
    if (!best) {
      auto other = db.countOtherVersions(key, version);
      if (other.ok() && *other > 0)
        none += "; " + std::to_string(*other) +
                " records of other kopt versions are ignored";
      return none + ")";
    }
    std::string error;
    std::optional<sched::MatmulSchedule> parsed =
        search::scheduleFromText(best->schedule, s, error);
    if (!parsed) {
      kernel.emitWarning() << "tuning database '" << tuningDb << "': trial "
                           << best->id << " of " << key
                           << " is not a readable schedule (" << error
                           << "); using the default heuristic";
      return "the default heuristic (trial " + std::to_string(best->id) +
             " of the tuning database '" + tuningDb + "' is unreadable)";
    }
    if (std::optional<std::string> reason = sched::validate(*parsed, w, target)) {
      kernel.emitWarning() << "tuning database '" << tuningDb << "': trial "
                           << best->id << " of " << key
                           << " is invalid for this kopt: " << *reason
                           << "; using the default heuristic";
      return "the default heuristic (trial " + std::to_string(best->id) +
             " of the tuning database '" + tuningDb + "' is invalid)";
    }
    s = *parsed;
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.4f", best->medianMs);
    return "the tuning database '" + tuningDb + "' (trial " +
           std::to_string(best->id) + ", " + ms + " ms" +
           (best->device.empty() ? "" : " on " + best->device) +
           (best->ops != ops ? ", measured as " + best->ops : "") + ")";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    std::optional<sched::Target> target = sched::Target::forChip(chip);
    if (!target) {
      emitError(loc) << "kopt-select-schedule: unknown chip '" << chip << "'";
      return signalPassFailure();
    }
    std::unique_ptr<search::Database> db;
    if (!tuningDb.empty()) {
      auto opened = search::Database::open(tuningDb, /*readOnly=*/true);
      if (!opened.ok()) {
        emitError(loc) << "kopt-select-schedule: " << opened.error();
        return signalPassFailure();
      }
      db = std::move(*opened);
    }
    File file;
    if (!scheduleFile.empty()) {
      FailureOr<File> f = readFile(loc);
      if (failed(f))
        return signalPassFailure();
      file = std::move(*f);
    }

    json spaces = json::array();
    ErrorBudget errors;
    std::set<std::string> used;
    std::vector<std::string> matmulKernels;
    bool ok = true;
    module.walk([&](KernelOp kernel) {
      std::string name = kernel.getSymName().str();
      MatmulOp mm = matmulOf(kernel);
      if (mm)
        matmulKernels.push_back(name);
      if (!mm) {
        if (file.entries.contains(name)) {
          used.insert(name);
          errors.opError(kernel)
              << "is named in the schedule file '" << scheduleFile
              << "' but computes no matmul; only matmul kernels take "
                 "schedules";
          ok = false;
        }
        return;
      }
      sched::MatmulWorkload w = workloadOf(mm);
      std::string key = w.key(target->chip);
      sched::MatmulSchedule s = sched::defaultSchedule(w, *target);
      std::string source = "the default heuristic";
      if (ScheduleAttr attr = kernel.getScheduleAttr()) {
        s = attr.getSchedule();
        source = "the kernel's schedule attribute";
      } else if (db) {
        FailureOr<std::string> fromDb =
            scheduleFromDatabase(*db, kernel, w, key, *target, s);
        if (failed(fromDb)) {
          ok = false;
          return;
        }
        source = *fromDb;
      }

      const json *entry = nullptr;
      std::string entryName;
      if (file.all) {
        entry = &*file.all;
        entryName = "the schedule";
      } else {
        // Precedence: kernel name, then workload key, then "*"; every entry
        // that matches counts as used.
        for (const std::string &k : {name, key, std::string("*")})
          if (file.entries.contains(k)) {
            used.insert(k);
            if (!entry) {
              entry = &file.entries[k];
              entryName = "entry '" + k + "'";
            }
          }
      }
      if (entry) {
        std::string error;
        std::optional<sched::MatmulSchedule> parsed =
            sched::fromJSON(*entry, s, error);
        if (!parsed) {
          errors.opError(kernel) << "cannot use " << entryName << " of '"
                                 << scheduleFile << "': " << error;
          ok = false;
          return;
        }
        s = *parsed;
        source = entryName + " of the schedule file '" + scheduleFile + "'";
      }
      if (db)
        kernel.emitRemark() << "schedule of " << key << " from " << source;
      if (std::optional<std::string> reason = sched::validate(s, w, *target)) {
        errors.opError(kernel)
            << "schedule is invalid for " << key << ": " << *reason;
        ok = false;
        return;
      }
      kernel.setScheduleAttr(ScheduleAttr::get(&getContext(), s));
      kernel.setScheduleCheckedForAttr(
          StringAttr::get(&getContext(), target->chip));
      if (printSpace) {
        json space = sched::spaceJSON(w, *target);
        space["kernel"] = name;
        space["selected"] = sched::toJSON(s);
        spaces.push_back(std::move(space));
      }
    });
    for (auto it = file.entries.begin(); it != file.entries.end(); ++it)
      if (!used.count(it.key()) && it.key() != "*") {
        InFlightDiagnostic diag = errors.error(loc);
        diag << "the schedule file '" << scheduleFile << "' has an entry '"
             << sched::abbreviate(it.key())
             << "' that names no matmul kernel of the module (by "
                "name or workload key; kopt-pack-operands may have "
                "changed a workload: --kopt-print-space lists the "
                "keys as compiled; kopt-fuse names a kernel after its "
                "ops, so a fused epilogue changes a name, not a key)";
        if (!matmulKernels.empty())
          diag << "; the module's matmul kernels: "
               << llvm::join(matmulKernels, ", ");
        ok = false;
      }
    if (!ok) {
      errors.summarize(loc);
      return signalPassFailure();
    }
    if (printSpace) {
      llvm::outs() << spaces.dump(2) << "\n";
      llvm::outs().flush();
    }
  }
};

} // namespace
