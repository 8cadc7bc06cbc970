//===- kopt-space.cpp - inspect and sample matmul schedule spaces ---------===//
//
// The matmul schedule space of one workload, without compiling anything
// (docs/schedules.md):
//
//   kopt-space --shape=4096x4096x4096 --dtype=bf16 --transpose-b
//       prints the space (domains, constraints, default, valid points);
//   ... --default            the default heuristic's schedule;
//   ... --check=FILE.json    whether FILE's schedule is valid, and why not;
//   ... --sample=N --seed=S  N points drawn uniformly from the domains, each
//                            with "valid" and, when invalid, the violated
//                            "constraint" (its id) and the "reason";
//   ... --valid              every valid point.
// At most one of --default, --check, --sample, --valid (two are an error).
// Output is JSON on stdout. Exit code: 0, 1 when --check finds the schedule
// invalid, 2 on bad arguments or an unreadable file.
//
//===----------------------------------------------------------------------===//

#include "kopt/Schedule/Schedule.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

using namespace kopt::schedule;
using nlohmann::json;
namespace cl = llvm::cl;

static cl::OptionCategory category("kopt-space options");

static cl::opt<std::string>
    shapeOpt("shape", cl::desc("M x N x K of C[M, N] = A[M, K] B[K, N]"),
             cl::cat(category), cl::value_desc("MxNxK"), cl::Required);
static cl::opt<std::string>
    dtypeOpt("dtype", cl::desc("operand dtype: f32, f16, bf16 (default: bf16)"),
             cl::cat(category), cl::init("bf16"));
static cl::opt<std::string>
    outDtypeOpt("out-dtype",
                cl::desc("result dtype: f32, f16, bf16 (default: --dtype)"),
                cl::cat(category), cl::init(""));
static cl::opt<bool> transposeA("transpose-a", cl::desc("A is stored [K, M]"),
                                cl::cat(category));
static cl::opt<bool>
    transposeB("transpose-b", cl::desc("B is stored [N, K] (a Linear weight)"),
               cl::cat(category));
static cl::opt<bool> tf32Opt(
    "tf32",
    cl::desc("the matmul allows TF32 (f32 operands; kopt.matmul {tf32})"),
    cl::cat(category));
static cl::opt<std::string> chipOpt("chip",
                                    cl::desc("target GPU (default: sm_90a)"),
                                    cl::cat(category), cl::init("sm_90a"));
static cl::opt<bool>
    printDefault("default", cl::desc("print the default heuristic's schedule"),
                 cl::cat(category));
static cl::opt<std::string> checkFile(
    "check", cl::desc("check the schedule in FILE (exit 1 when it is invalid)"),
    cl::cat(category), cl::value_desc("file"), cl::init(""));
static cl::opt<unsigned> sampleCount(
    "sample",
    cl::desc("draw N points (1 to 1000000) uniformly from the domains"),
    cl::cat(category), cl::init(0));
static cl::opt<uint64_t>
    seedOpt("seed", cl::desc("random seed of --sample (default: 0)"),
            cl::cat(category), cl::init(0));
static cl::opt<bool> printValid("valid", cl::desc("print every valid point"),
                                cl::cat(category));

static int fail(const std::string &msg) {
  llvm::errs() << "kopt-space: error: " << msg << "\n";
  return 2;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kopt-space (kopt) version " << KOPT_VERSION << "\n";
    os.flush();
    cl::PrintVersionMessage();
  });
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "kopt matmul schedule spaces (docs/schedules.md)\n\n"
          "  Prints the space of the workload (--shape, --dtype, ...) as "
          "JSON,\n"
          "  or, with one of --default, --check, --sample, --valid, that\n"
          "  instead. Exit code: 0; 1 when --check finds the schedule "
          "invalid;\n"
          "  2 on bad arguments or an unreadable file.\n",
          &llvm::errs()))
    return 2;
  // One mode at most: a second would be ignored silently.
  llvm::SmallVector<const char *, 4> modes;
  if (printDefault)
    modes.push_back("--default");
  if (checkFile.getNumOccurrences())
    modes.push_back("--check");
  if (sampleCount.getNumOccurrences())
    modes.push_back("--sample");
  if (printValid)
    modes.push_back("--valid");
  if (modes.size() > 1)
    return fail(std::string(modes[0]) + " and " + modes[1] +
                " are different modes; give at most one of --default, "
                "--check, --sample, --valid");
  if (seedOpt.getNumOccurrences() && !sampleCount.getNumOccurrences())
    return fail("--seed applies to --sample only");
  MatmulWorkload w;
  // Sizes up to 2^40 (no GPU holds a larger dimension of 16-bit elements).
  llvm::SmallVector<llvm::StringRef, 3> parts;
  llvm::StringRef(shapeOpt).split(parts, 'x');
  int64_t dims[3];
  bool shapeOk = parts.size() == 3;
  for (unsigned i = 0; shapeOk && i < 3; ++i)
    shapeOk = !parts[i].getAsInteger(10, dims[i]) && dims[i] > 0 &&
              dims[i] <= (int64_t(1) << 40);
  if (!shapeOk)
    return fail("--shape must be MxNxK with sizes from 1 to 2^40, got '" +
                shapeOpt + "'");
  w.m = dims[0], w.n = dims[1], w.k = dims[2];
  if (sampleCount.getNumOccurrences() &&
      (sampleCount == 0 || sampleCount > 1000000))
    return fail("--sample takes 1 to 1000000 points");
  std::optional<DType> a = parseDType(dtypeOpt);
  std::optional<DType> c =
      parseDType(outDtypeOpt.empty() ? dtypeOpt : outDtypeOpt);
  if (!a || !c)
    return fail("dtypes must be f32, f16 or bf16");
  if (tf32Opt && *a != DType::F32)
    return fail("--tf32 applies to f32 operands (--dtype=f32)");
  w.a = w.b = *a;
  w.c = *c;
  w.aKContiguous = !transposeA;
  w.bKContiguous = transposeB;
  w.tf32 = tf32Opt;
  std::optional<Target> t = Target::forChip(chipOpt);
  if (!t)
    return fail("unknown chip '" + chipOpt + "'");

  if (checkFile.getNumOccurrences()) {
    if (checkFile.empty())
      return fail("--check needs a file");
    auto buffer = llvm::MemoryBuffer::getFile(checkFile, /*IsText=*/true);
    if (!buffer)
      return fail("cannot read '" + checkFile +
                  "': " + buffer.getError().message());
    std::string parseError;
    std::optional<json> parsed =
        parseJSON((*buffer)->getBuffer().str(), parseError);
    if (!parsed)
      return fail("'" + checkFile + "' is not valid JSON: " + parseError);
    json j = std::move(*parsed);
    std::string error;
    std::optional<MatmulSchedule> s =
        fromJSON(j, defaultSchedule(w, *t), error);
    if (!s)
      return fail(checkFile + ": " + error);
    std::optional<Rejection> rejection = check(*s, w, *t);
    json out = {{"schedule", toJSON(*s)}, {"valid", !rejection}};
    if (rejection) {
      out["constraint"] = rejection->constraint->id;
      out["reason"] = rejection->reason;
    }
    llvm::outs() << out.dump(2) << "\n";
    return rejection ? 1 : 0;
  }
  if (printDefault) {
    llvm::outs() << toJSON(defaultSchedule(w, *t)).dump(2) << "\n";
    return 0;
  }
  if (sampleCount.getNumOccurrences()) {
    std::mt19937_64 rng(seedOpt);
    json out = json::array();
    for (unsigned i = 0; i < sampleCount; ++i) {
      MatmulSchedule s = samplePoint(rng);
      std::optional<Rejection> rejection = check(s, w, *t);
      json p = {{"schedule", toJSON(s)}, {"valid", !rejection}};
      if (rejection) {
        p["constraint"] = rejection->constraint->id;
        p["reason"] = rejection->reason;
      }
      out.push_back(p);
    }
    llvm::outs() << out.dump(2) << "\n";
    return 0;
  }
  if (printValid) {
    // One compact JSON array, written point by point: a JSON value of every
    // point at once would take over a gigabyte for a large space.
    llvm::outs() << "[";
    bool first = true;
    for (const MatmulSchedule &s : validPoints(w, *t)) {
      llvm::outs() << (first ? "" : ",") << toJSON(s).dump();
      first = false;
    }
    llvm::outs() << "]\n";
    return 0;
  }
  llvm::outs() << spaceJSON(w, *t).dump(2) << "\n";
  return 0;
}
