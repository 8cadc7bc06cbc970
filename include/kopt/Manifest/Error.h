//===- Error.h - Status and Expected<T> of the manifest library -*- C++ -*-===//
//
// A minimal error-or-value type used by the manifest library (lib/Manifest) and
// throughout lib/Runtime, which imports it (kopt/Runtime/Error.h). Neither
// throws across its public API nor aborts on bad input: every failure
// (malformed manifest, missing CUDA driver, failing CUDA call) comes back as a
// Status or an Expected<T> holding a human-readable message.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_MANIFEST_ERROR_H
#define KOPT_MANIFEST_ERROR_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace kopt::manifest {

/// Success, or a failure carrying a message. Messages have no trailing
/// newline and name what failed, e.g.
/// "softmax.json: kernels[0].params[1].dtype: unknown dtype 'f64'".
class [[nodiscard]] Status {
public:
  /// A success.
  Status() = default;
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  const std::string &message() const { return msg; }

  /// Returns a failure whose message is `prefix + ": " + message()`; a success
  /// stays a success.
  Status withContext(const std::string &prefix) const {
    if (ok())
      return *this;
    return error(prefix + ": " + msg);
  }

private:
  bool failed = false;
  std::string msg;
};

/// A value of type T, or a failure message.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : val(std::move(value)) {}
  /// Builds a failure. `status` must be a failure.
  Expected(Status status) : err(std::move(status)) {
    assert(!err.ok() && "Expected built from a successful Status");
  }

  bool ok() const { return val.has_value(); }
  /// The failure message; empty on success.
  const std::string &error() const { return err.message(); }
  /// The failure as a Status (success when a value is held).
  const Status &status() const { return err; }

  T &operator*() {
    assert(ok());
    return *val;
  }
  const T &operator*() const {
    assert(ok());
    return *val;
  }
  T *operator->() {
    assert(ok());
    return &*val;
  }
  const T *operator->() const {
    assert(ok());
    return &*val;
  }
  /// Moves the value out.
  T take() {
    assert(ok());
    return std::move(*val);
  }

private:
  std::optional<T> val;
  Status err;
};

} // namespace kopt::manifest

/// Returns early from the enclosing function (which must return Status or
/// Expected<...>) when `expr` (a Status) is a failure.
#define KOPT_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::kopt::manifest::Status koptStatus_ = (expr);                             \
    if (!koptStatus_.ok())                                                     \
      return koptStatus_;                                                      \
  } while (false)

#endif // KOPT_MANIFEST_ERROR_H
