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
//                            with "valid" and, when invalid, the "reason";
//   ... --valid              every valid point.
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
static cl::opt<std::string> dtypeOpt("dtype",
                                     cl::desc("operand dtype: f32, f16, bf16"),
                                     cl::cat(category), cl::init("bf16"));
static cl::opt<std::string>
    outDtypeOpt("out-dtype", cl::desc("result dtype (default: --dtype)"),
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
static cl::opt<std::string> chipOpt("chip", cl::desc("target GPU"),
                                    cl::cat(category), cl::init("sm_90a"));
static cl::opt<bool> printDefault("default",
                                  cl::desc("print the default schedule"),
                                  cl::cat(category));
static cl::opt<std::string> checkFile("check",
                                      cl::desc("validate the schedule in FILE"),
                                      cl::cat(category), cl::value_desc("file"),
                                      cl::init(""));
static cl::opt<unsigned> sampleCount("sample",
                                     cl::desc("draw N points from the domains"),
                                     cl::cat(category), cl::init(0));
static cl::opt<uint64_t> seedOpt("seed", cl::desc("random seed of --sample"),
                                 cl::cat(category), cl::init(0));
static cl::opt<bool> printValid("valid", cl::desc("print every valid point"),
                                cl::cat(category));

static int fail(const std::string &msg) {
  llvm::errs() << "kopt-space: error: " << msg << "\n";
  return 2;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv, "kopt matmul schedule spaces (docs/schedules.md)\n",
          &llvm::errs()))
    return 2;
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

  if (!checkFile.empty()) {
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
    std::optional<std::string> reason = validate(*s, w, *t);
    json out = {{"schedule", toJSON(*s)}, {"valid", !reason}};
    if (reason)
      out["reason"] = *reason;
    llvm::outs() << out.dump(2) << "\n";
    return reason ? 1 : 0;
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
      std::optional<std::string> reason = validate(s, w, *t);
      json p = {{"schedule", toJSON(s)}, {"valid", !reason}};
      if (reason)
        p["reason"] = *reason;
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
