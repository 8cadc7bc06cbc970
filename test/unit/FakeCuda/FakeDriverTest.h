//===- FakeDriverTest.h - GoogleTest support for the fake driver -*- C++
//-*-===//
//
// What the unit tests that run the CUDA runtime against test/unit/FakeCuda's
// libcuda.so.1 (CTest sets LD_LIBRARY_PATH) share: the fake's recording
// functions (FakeCudaHooks.h), found with dlopen("libcuda.so.1",
// RTLD_NOLOAD) once the runtime has loaded the driver, and a fixture holding
// a context, the hooks, a stream and device buffers. Built as the static
// library kopt_fake_cuda_testing.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_FAKECUDA_FAKEDRIVERTEST_H
#define KOPT_TEST_FAKECUDA_FAKEDRIVERTEST_H

#include "FakeCudaHooks.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kopt::test {

/// The fake driver's recording functions: the member, its type
/// (FakeCudaHooks.h) and the symbol.
#define KOPT_FAKE_DRIVER_HOOKS(X)                                              \
  X(encodeCount, KoptFakeEncodeCountFn, koptFakeTensorMapEncodeCount)          \
  X(encodeCall, KoptFakeEncodeCallFn, koptFakeTensorMapEncodeCall)             \
  X(memcpyHtoDCount, KoptFakeMemcpyHtoDCountFn, koptFakeMemcpyHtoDCount)       \
  X(lastLaunch, KoptFakeLastLaunchFn, koptFakeLastLaunch)                      \
  X(launchCount, KoptFakeLaunchCountFn, koptFakeLaunchCount)                   \
  X(launchParams, KoptFakeLaunchParamsFn, koptFakeLaunchParams)

struct FakeDriverHooks {
#define KOPT_DECLARE_HOOK(member, type, symbol) type member = nullptr;
  KOPT_FAKE_DRIVER_HOOKS(KOPT_DECLARE_HOOK)
#undef KOPT_DECLARE_HOOK

  /// The cuTensorMapEncodeTiled calls from call `first` on.
  std::vector<KoptFakeEncodeCall> callsSince(size_t first) const;
  /// The `.u64` parameter values of the last launch.
  std::vector<uint64_t> lastLaunchParams() const;
  /// The `.u64` parameter values of launch `index`.
  std::vector<uint64_t> launch(size_t index) const;
};

/// The hooks of the libcuda.so.1 the runtime loaded; null when none is
/// loaded or it is not the fake.
std::unique_ptr<FakeDriverHooks> findFakeDriverHooks();

/// The manifest test/unit/Inputs/fake/NAME.json.
rt::Expected<rt::Manifest> loadFakeManifest(const std::string &name);

/// A context on device 0 of the fake driver, its hooks, a stream and the
/// manifests named at construction (Inputs/fake/NAME.json); device buffers
/// allocated through it are freed before the context.
class FakeDriverTest : public ::testing::Test {
protected:
  explicit FakeDriverTest(std::vector<std::string> manifestNames = {})
      : manifestNames(std::move(manifestNames)) {}
  void SetUp() override;
  void TearDown() override;

  /// A device buffer of `bytes` (0 and a failure when it cannot be had).
  rt::DevicePtr allocate(int64_t bytes);
  /// A buffer per tensor: f32 and bf16 inputs hold `value`, workspaces zero
  /// (on the stream), outputs the fake's fresh memory (0xA5 bytes).
  std::vector<rt::DevicePtr>
  allocateFor(const std::vector<rt::TensorSpec> &tensors, float value);

  std::unique_ptr<rt::CudaContext> ctx;
  std::unique_ptr<FakeDriverHooks> hooks;
  rt::Stream stream = nullptr;
  std::vector<rt::DeviceBuffer> buffers; // freed before ctx (declared after it)
  /// Loaded by SetUp, in the order of their names.
  std::vector<rt::Manifest> manifests;

private:
  std::vector<std::string> manifestNames;
};

} // namespace kopt::test

#endif // KOPT_TEST_FAKECUDA_FAKEDRIVERTEST_H
