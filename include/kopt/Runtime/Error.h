//===- Error.h - The runtime's error types and manifest names ---*- C++ -*-===//
//
// The runtime speaks the manifest library's vocabulary: its Status and
// Expected<T> (kopt/Manifest/Error.h) and the schema of kopt/Manifest (DType,
// KernelSpec, Manifest, ...) are visible in kopt::rt under their own names.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_ERROR_H
#define KOPT_RUNTIME_ERROR_H

#include "kopt/Manifest/Error.h"
#include "kopt/Manifest/Manifest.h"

namespace kopt::rt {
using namespace kopt::manifest;
} // namespace kopt::rt

#endif // KOPT_RUNTIME_ERROR_H
