//===- NoCompiler.cpp - kopt_compile in a runtime-only libkopt ------------===//
//
// A libkopt.so built with KOPT_BUILD_COMPILER=OFF (a GPU host without LLVM,
// before the self-contained build): loading and launching work, compiling
// says why it does not.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdlib>

using kopt::capi::makeError;

struct kopt_compiled {};

extern "C" {

kopt_error *kopt_compile(const char *, size_t, const kopt_compile_options *,
                         kopt_compiled **) {
  return makeError("kopt_compile: this libkopt was built without the compiler "
                   "(KOPT_BUILD_COMPILER=OFF); use the self-contained build "
                   "(README) to compile on this machine");
}
const char *kopt_compiled_ptx(const kopt_compiled *, size_t *length) {
  if (length)
    *length = 0;
  return nullptr;
}
const char *kopt_compiled_manifest(const kopt_compiled *, size_t *length) {
  if (length)
    *length = 0;
  return nullptr;
}
kopt_error *kopt_compiled_write(const kopt_compiled *, const char *) {
  return makeError("kopt_compiled_write: built without the compiler");
}
void kopt_compiled_free(kopt_compiled *) {}

kopt_error *kopt_tuning_db_add(const char *, const char *, size_t) {
  return makeError("kopt_tuning_db_add: this libkopt was built without the "
                   "compiler (KOPT_BUILD_COMPILER=OFF), which holds the "
                   "tuning database");
}
kopt_error *kopt_tuning_db_trials(const char *, const char *, char **) {
  return makeError("kopt_tuning_db_trials: this libkopt was built without the "
                   "compiler (KOPT_BUILD_COMPILER=OFF), which holds the "
                   "tuning database");
}
void kopt_string_free(char *text) { std::free(text); }

} // extern "C"
