//===- FakeDriverTest.cpp - GoogleTest support for the fake driver --------===//
//
// See FakeDriverTest.h.
//
//===----------------------------------------------------------------------===//

#include "FakeDriverTest.h"
#include "kopt/Runtime/Float16.h"

#include <dlfcn.h>

using namespace kopt::rt;

namespace kopt::test {

std::vector<KoptFakeEncodeCall>
FakeDriverHooks::callsSince(size_t first) const {
  std::vector<KoptFakeEncodeCall> calls;
  for (size_t i = first; i < encodeCount(); ++i) {
    KoptFakeEncodeCall c;
    if (encodeCall(i, &c))
      calls.push_back(c);
  }
  return calls;
}

std::vector<uint64_t> FakeDriverHooks::lastLaunchParams() const {
  std::vector<uint64_t> values(16);
  values.resize(lastLaunch(values.data(), values.size()));
  return values;
}

std::vector<uint64_t> FakeDriverHooks::launch(size_t index) const {
  std::vector<uint64_t> values(16);
  values.resize(launchParams(index, values.data(), values.size()));
  return values;
}

std::unique_ptr<FakeDriverHooks> findFakeDriverHooks() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib)
    return nullptr;
  auto h = std::make_unique<FakeDriverHooks>();
  bool all = true;
#define KOPT_RESOLVE_HOOK(member, type, symbol)                                \
  h->member = reinterpret_cast<type>(dlsym(lib, #symbol));                     \
  all = all && h->member;
  KOPT_FAKE_DRIVER_HOOKS(KOPT_RESOLVE_HOOK)
#undef KOPT_RESOLVE_HOOK
  dlclose(lib); // the runtime holds its own reference
  if (!all)
    return nullptr;
  return h;
}

Expected<Manifest> loadFakeManifest(const std::string &name) {
  return loadManifest(std::string(KOPT_TEST_INPUTS) + "/fake/" + name +
                      ".json");
}

void FakeDriverTest::SetUp() {
  Expected<std::unique_ptr<CudaContext>> c = CudaContext::create(0);
  ASSERT_TRUE(c.ok()) << c.error()
                      << " (run with LD_LIBRARY_PATH naming the fake driver "
                         "of test/unit/FakeCuda)";
  ctx = c.take();
  hooks = findFakeDriverHooks();
  ASSERT_TRUE(hooks) << "libcuda.so.1 is not kopt's fake driver";
  Expected<Stream> s = ctx->createStream();
  ASSERT_TRUE(s.ok()) << s.error();
  stream = *s;
  for (const std::string &name : manifestNames) {
    Expected<Manifest> m = loadFakeManifest(name);
    ASSERT_TRUE(m.ok()) << m.error();
    manifests.push_back(m.take());
  }
}

void FakeDriverTest::TearDown() {
  buffers.clear();
  if (ctx && stream)
    (void)ctx->destroyStream(stream);
}

DevicePtr FakeDriverTest::allocate(int64_t bytes) {
  Expected<DeviceBuffer> b = ctx->allocate(bytes);
  EXPECT_TRUE(b.ok()) << b.error();
  if (!b.ok())
    return 0;
  buffers.push_back(b.take());
  return buffers.back().get();
}

std::vector<DevicePtr>
FakeDriverTest::allocateFor(const std::vector<TensorSpec> &tensors,
                            float value) {
  std::vector<DevicePtr> pointers;
  for (const TensorSpec &t : tensors) {
    DevicePtr p = allocate(t.numBytes());
    if (t.role == Role::Input && t.dtype == DType::F32) {
      std::vector<float> host(t.numElements(), value);
      EXPECT_TRUE(ctx->copyToDevice(p, host.data(), t.numBytes()).ok());
    } else if (t.role == Role::Input && t.dtype == DType::BF16) {
      std::vector<uint16_t> host(t.numElements(), floatToBf16(value));
      EXPECT_TRUE(ctx->copyToDevice(p, host.data(), t.numBytes()).ok());
    } else if (t.role == Role::Workspace) {
      EXPECT_TRUE(ctx->memsetAsync(p, 0, t.numBytes(), stream).ok());
    }
    pointers.push_back(p);
  }
  return pointers;
}

} // namespace kopt::test
