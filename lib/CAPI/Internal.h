//===- Internal.h - Shared pieces of the C API's implementation -*- C++ -*-===//

#ifndef KOPT_LIB_CAPI_INTERNAL_H
#define KOPT_LIB_CAPI_INTERNAL_H

#include "kopt-c/kopt.h"

#include <exception>
#include <new>
#include <string>

struct kopt_error {
  std::string message;
};

namespace kopt::capi {

/// A new error object holding `message` (never null: on out-of-memory a
/// static error is returned, which kopt_error_free recognizes).
kopt_error *makeError(std::string message);

/// Runs `body` (returning kopt_error *), turning any C++ exception into an
/// error named after `function`, so that none crosses the C interface.
template <typename F> kopt_error *guard(const char *function, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeError(std::string(function) + ": out of host memory");
  } catch (const std::exception &e) {
    return makeError(std::string(function) + ": " + e.what());
  } catch (...) {
    return makeError(std::string(function) + ": unknown C++ exception");
  }
}

} // namespace kopt::capi

#endif // KOPT_LIB_CAPI_INTERNAL_H
