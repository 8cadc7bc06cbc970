//===- Error.cpp - Errors and versions of the C API -----------------------===//

#include "Internal.h"

#ifndef KOPT_VERSION
#define KOPT_VERSION "0.0.0"
#endif

namespace {
kopt_error outOfMemory{"out of host memory"};
} // namespace

kopt_error *kopt::capi::makeError(std::string message) {
  try {
    return new kopt_error{std::move(message)};
  } catch (...) {
    return &outOfMemory;
  }
}

extern "C" {

int kopt_c_api_version(void) { return KOPT_C_API_VERSION; }

const char *kopt_version_string(void) {
#ifdef KOPT_CAPI_HAS_COMPILER
  return "kopt " KOPT_VERSION " (LLVM " KOPT_LLVM_VERSION ")";
#else
  return "kopt " KOPT_VERSION " (runtime only)";
#endif
}

const char *kopt_error_message(const kopt_error *error) {
  return error ? error->message.c_str() : "";
}

void kopt_error_free(kopt_error *error) {
  if (error != &outOfMemory)
    delete error;
}

} // extern "C"
