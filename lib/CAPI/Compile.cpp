//===- Compile.cpp - kopt_compile: MLIR text to PTX + manifest ------------===//

#include "Internal.h"

#include "kopt/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>

using namespace mlir;
using kopt::capi::guard;
using kopt::capi::makeError;

struct kopt_compiled {
  std::string ptx;
  std::string manifest;
};

namespace {

/// Whether `options` (of `struct_size` bytes as the caller knew the struct)
/// holds `field`.
#define KOPT_HAS_FIELD(options, field)                                         \
  ((options)->struct_size >=                                                   \
   offsetof(kopt_compile_options, field) + sizeof((options)->field))

/// The registry every compile's context uses: built once, read-only after.
const DialectRegistry &compilerRegistry() {
  static const DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    kopt::registerCompilerDialects(*r);
    return r;
  }();
  return *registry;
}

std::string str(const char *s, const char *fallback) {
  return s && *s ? std::string(s) : std::string(fallback);
}

/// Reads the caller's options into the pipeline's; an error for values out
/// of range.
kopt_error *readOptions(const kopt_compile_options *options,
                        kopt::KoptToPTXOptions &opts, std::string &sourceName,
                        std::string &ptxName) {
  sourceName = "<kopt_compile>";
  ptxName = "kernels.ptx";
  if (!options)
    return nullptr;
  if (options->struct_size < sizeof(size_t))
    return makeError("kopt_compile: options->struct_size is " +
                     std::to_string(options->struct_size) +
                     "; set it to sizeof(kopt_compile_options)");
  if (KOPT_HAS_FIELD(options, chip))
    opts.chip = str(options->chip, "sm_90a");
  if (KOPT_HAS_FIELD(options, features))
    opts.features = str(options->features, "+ptx80");
  if (KOPT_HAS_FIELD(options, opt_level)) {
    if (options->opt_level < 0 || options->opt_level > 3)
      return makeError("kopt_compile: opt_level " +
                       std::to_string(options->opt_level) +
                       " is out of range (1 to 3, or 0 for the default)");
    if (options->opt_level > 0)
      opts.optLevel = static_cast<unsigned>(options->opt_level);
  }
  if (KOPT_HAS_FIELD(options, cuda_path))
    opts.cudaPath = str(options->cuda_path, "");
  if (KOPT_HAS_FIELD(options, schedule_file))
    opts.schedule = str(options->schedule_file, "");
  if (KOPT_HAS_FIELD(options, pack_min_reuse) && options->pack_min_reuse != 0)
    opts.packMinReuse =
        options->pack_min_reuse < 0 ? 0 : options->pack_min_reuse;
  if (KOPT_HAS_FIELD(options, no_fusion))
    opts.fuse = options->no_fusion == 0;
  if (KOPT_HAS_FIELD(options, fusion_plan_file))
    opts.fusionPlan = str(options->fusion_plan_file, "");
  if (KOPT_HAS_FIELD(options, tuning_db_file))
    opts.tuningDb = str(options->tuning_db_file, "");
  if (KOPT_HAS_FIELD(options, source_name))
    sourceName = str(options->source_name, "<kopt_compile>");
  if (KOPT_HAS_FIELD(options, ptx_file_name))
    ptxName = str(options->ptx_file_name, "kernels.ptx");
  if (llvm::sys::path::filename(ptxName) != ptxName)
    return makeError("kopt_compile: ptx_file_name '" + ptxName +
                     "' must be a file name without a folder");
  return nullptr;
}

/// Writes `text` to `path` through a temporary file and a rename.
kopt_error *writeFile(const std::string &path, const std::string &text) {
  llvm::Error err = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    os << text;
    return llvm::Error::success();
  });
  if (err)
    return makeError("kopt_compiled_write: " + llvm::toString(std::move(err)));
  return nullptr;
}

/// The deepest bracket nesting of MLIR text ('(' '[' '{' '<' against their
/// closers, outside string literals and // comments; a stray '>' of '->'
/// never goes below 0). MLIR's parser recurses per level: see kMaxNesting.
size_t nestingDepth(llvm::StringRef text) {
  size_t depth = 0, deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth) {
      --depth;
    }
  }
  return deepest;
}

/// MLIR's parser recurses once per nesting level (about 2 KB of stack each,
/// measured: 5000 levels overflowed an 8 MiB stack): compiles run on a thread
/// of kCompileStackBytes, and text nested deeper than kMaxNesting is refused
/// before parsing instead of overflowing it.
constexpr size_t kMaxNesting = 10000;
constexpr unsigned kCompileStackBytes = 256u << 20;

kopt_error *compileText(llvm::StringRef source,
                        const kopt::KoptToPTXOptions &opts,
                        const std::string &sourceName,
                        const std::string &ptxName, kopt_compiled **result);

} // namespace

extern "C" {

kopt_error *kopt_compile(const char *mlir_text, size_t length,
                         const kopt_compile_options *options,
                         kopt_compiled **result) {
  return guard("kopt_compile", [&]() -> kopt_error * {
    if (!result)
      return makeError("kopt_compile: result is null");
    if (!mlir_text && length)
      return makeError("kopt_compile: mlir_text is null");
    kopt::KoptToPTXOptions opts;
    std::string sourceName, ptxName;
    if (kopt_error *e = readOptions(options, opts, sourceName, ptxName))
      return e;

    llvm::StringRef source(mlir_text ? mlir_text : "", length);
    if (size_t depth = nestingDepth(source); depth > kMaxNesting)
      return makeError(sourceName + ": brackets nested " +
                       std::to_string(depth) +
                       " deep; kopt compiles text "
                       "nested at most " +
                       std::to_string(kMaxNesting) + " deep");
    kopt_error *error = nullptr;
    // On a thread with a stack deep enough for kMaxNesting levels.
    llvm::thread worker(std::optional<unsigned>(kCompileStackBytes), [&] {
      error = guard("kopt_compile", [&]() -> kopt_error * {
        return compileText(source, opts, sourceName, ptxName, result);
      });
    });
    worker.join();
    return error;
  });
}

} // extern "C"

namespace {
kopt_error *compileText(llvm::StringRef source,
                        const kopt::KoptToPTXOptions &opts,
                        const std::string &sourceName,
                        const std::string &ptxName, kopt_compiled **result) {
  {
    MLIRContext context(compilerRegistry());
    // Diagnostics name the op and the reason, as kopt-opt prints them.
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, sourceName),
        llvm::SMLoc());
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);

    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    FailureOr<kopt::PTXOutput> out = failure();
    if (module)
      out = kopt::compileModule(*module, opts, ptxName);
    if (failed(out)) {
      os.flush();
      if (diagnostics.empty())
        diagnostics = sourceName + ": the compile failed (no diagnostic)";
      while (!diagnostics.empty() && diagnostics.back() == '\n')
        diagnostics.pop_back();
      return makeError(diagnostics);
    }
    *result = new kopt_compiled{std::move(out->ptx), std::move(out->manifest)};
    return nullptr;
  }
}
} // namespace

extern "C" {

const char *kopt_compiled_ptx(const kopt_compiled *compiled, size_t *length) {
  if (!compiled) {
    if (length)
      *length = 0;
    return nullptr;
  }
  if (length)
    *length = compiled->ptx.size();
  return compiled->ptx.c_str();
}

const char *kopt_compiled_manifest(const kopt_compiled *compiled,
                                   size_t *length) {
  if (!compiled) {
    if (length)
      *length = 0;
    return nullptr;
  }
  if (length)
    *length = compiled->manifest.size();
  return compiled->manifest.c_str();
}

kopt_error *kopt_compiled_write(const kopt_compiled *compiled,
                                const char *ptx_path) {
  return guard("kopt_compiled_write", [&]() -> kopt_error * {
    if (!compiled)
      return makeError("kopt_compiled_write: compiled is null");
    if (!ptx_path || !*ptx_path)
      return makeError("kopt_compiled_write: ptx_path is empty");
    std::string ptxPath = ptx_path;
    llvm::SmallString<256> manifestPath(ptxPath);
    llvm::sys::path::replace_extension(manifestPath, "json");
    if (manifestPath == ptxPath)
      return makeError("kopt_compiled_write: '" + ptxPath +
                       "' must not end in .json (the manifest goes there)");
    // The manifest names its PTX file.
    nlohmann::ordered_json manifest =
        nlohmann::ordered_json::parse(compiled->manifest);
    manifest["ptx"] = llvm::sys::path::filename(ptxPath).str();
    std::string manifestText =
        manifest.dump(2, ' ', false,
                      nlohmann::ordered_json::error_handler_t::replace) +
        "\n";
    if (kopt_error *e = writeFile(ptxPath, compiled->ptx))
      return e;
    return writeFile(std::string(manifestPath), manifestText);
  });
}

void kopt_compiled_free(kopt_compiled *compiled) { delete compiled; }

} // extern "C"
