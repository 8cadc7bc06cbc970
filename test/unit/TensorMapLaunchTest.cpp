//===- TensorMapLaunchTest.cpp - TMA tensor maps against the fake driver --===//
//
// Runs the CUDA runtime (Runtime.h) against test/unit/FakeCuda's libcuda.so.1
// (CTest sets LD_LIBRARY_PATH): the maps of a kernel's `tensor_maps` are
// encoded with the right arguments, copied to 64-byte aligned device buffers
// whose addresses follow the parameters at launch, and re-encoded only when
// the address bound to their tensor changes. And the PTX entry's parameter
// count (cuFuncGetParamInfo) is checked against the manifest's params and
// tensor maps before a launch; CTest runs these tests a second time against
// the fake built without cuFuncGetParamInfo (KOPT_TEST_NO_PARAM_INFO=1),
// where the check is skipped.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda/FakeDriverTest.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/ArgPack.h"
#include "kopt/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace kopt::rt;

namespace {

// cuda.h's values (docs/manifest.md, tensor_maps).
constexpr int kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9;
constexpr int kSwizzleNone = 0, kSwizzle64B = 2, kSwizzle128B = 3;
constexpr int kInterleaveNone = 0, kL2Promotion256B = 3, kOobFillNone = 0;

class TensorMapLaunch : public kopt::test::FakeDriverTest {
protected:
  TensorMapLaunch() : FakeDriverTest({"tma"}) {}

  const Manifest &manifest() const { return manifests[0]; }

  /// The fake encoding held by the device map at `address`.
  KoptFakeTensorMap readMap(DevicePtr address) {
    unsigned char bytes[kTensorMapBytes];
    KoptFakeTensorMap map{};
    EXPECT_TRUE(ctx->copyToHost(bytes, address, kTensorMapBytes).ok());
    EXPECT_TRUE(koptFakeDecodeTensorMap(bytes, map))
        << "no encoded tensor map at the address";
    return map;
  }
};

/// Checks one recorded call for a bf16 [rows, 48] tensor at `address`.
void expectBf16Call(const KoptFakeEncodeCall &c, uint64_t address,
                    uint64_t rows, uint32_t box0, uint32_t box1, int swizzle) {
  EXPECT_EQ(c.result, 0);
  EXPECT_EQ(c.dataType, kBfloat16);
  EXPECT_EQ(c.rank, 2u);
  EXPECT_EQ(c.globalAddress, address);
  EXPECT_EQ(c.globalDim[0], 48u); // innermost first
  EXPECT_EQ(c.globalDim[1], rows);
  EXPECT_EQ(c.globalStrides[0], 96u); // 48 x 2 bytes
  EXPECT_EQ(c.boxDim[0], box0);
  EXPECT_EQ(c.boxDim[1], box1);
  EXPECT_EQ(c.elementStrides[0], 1u);
  EXPECT_EQ(c.elementStrides[1], 1u);
  EXPECT_EQ(c.interleave, kInterleaveNone);
  EXPECT_EQ(c.swizzle, swizzle);
  EXPECT_EQ(c.l2Promotion, kL2Promotion256B);
  EXPECT_EQ(c.oobFill, kOobFillNone);
  EXPECT_EQ(c.tensorMap % 64, 0u);
}

} // namespace

TEST_F(TensorMapLaunch, LaunchPassesMapsAfterParams) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  ASSERT_EQ(k.tensorMaps.size(), 2u);
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  size_t before = hooks->encodeCount();
  ASSERT_TRUE(ctx->launchKernel(manifest(), k, ptrs, stream).ok());

  // Encoded once each, in tensor_maps order, from the manifest's fields.
  std::vector<KoptFakeEncodeCall> calls = hooks->callsSince(before);
  ASSERT_EQ(calls.size(), 2u);
  expectBf16Call(calls[0], ptrs[0], 32, 32, 16, kSwizzle64B);
  expectBf16Call(calls[1], ptrs[1], 40, 64, 8, kSwizzle128B);

  // The kernel got a, b, result, then the two maps' device addresses.
  std::vector<uint64_t> params = hooks->lastLaunchParams();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[0], ptrs[0]);
  EXPECT_EQ(params[1], ptrs[1]);
  EXPECT_EQ(params[2], ptrs[2]);
  EXPECT_NE(params[3], params[4]);
  for (int i : {3, 4})
    EXPECT_EQ(params[i] % kTensorMapAlignment, 0u) << "map " << i - 3;
  EXPECT_EQ(readMap(params[3]).globalAddress, ptrs[0]);
  EXPECT_EQ(readMap(params[4]).globalAddress, ptrs[1]);

  // And computed a b^T through them: all ones, K = 48.
  std::vector<float> out(32 * 40);
  ASSERT_TRUE(ctx->synchronize(stream).ok());
  ASSERT_TRUE(ctx->copyToHost(out.data(), ptrs[2], 32 * 40 * 4).ok());
  EXPECT_EQ(out[0], 48.0f);
  EXPECT_EQ(out.back(), 48.0f);
}

TEST_F(TensorMapLaunch, MapsFollowTheSplitKWorkspace) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_splitk_bf16");
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ASSERT_EQ(ptrs.size(), 4u);
  ASSERT_TRUE(ctx->launchKernel(manifest(), k, ptrs, stream).ok());
  std::vector<uint64_t> params = hooks->lastLaunchParams();
  ASSERT_EQ(params.size(), 6u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(params[i], ptrs[i]);
  EXPECT_EQ(readMap(params[4]).globalAddress, ptrs[0]);
  EXPECT_EQ(readMap(params[5]).globalAddress, ptrs[1]);
}

TEST_F(TensorMapLaunch, RelaunchReencodesOnlyChangedAddresses) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ASSERT_TRUE(ctx->launchKernel(manifest(), k, ptrs, stream).ok());
  std::vector<uint64_t> first = hooks->lastLaunchParams();
  size_t encodes = hooks->encodeCount(), copies = hooks->memcpyHtoDCount();

  // Same buffers: no encode and no host-to-device copy.
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(ctx->launchKernel(manifest(), k, ptrs, stream).ok());
  EXPECT_EQ(hooks->encodeCount(), encodes);
  EXPECT_EQ(hooks->memcpyHtoDCount(), copies);
  EXPECT_EQ(hooks->lastLaunchParams(), first);

  // Another buffer for 'a': its map alone is re-encoded, in the same place.
  std::vector<DevicePtr> moved = ptrs;
  moved[0] = allocate(32 * 48 * 2);
  copies = hooks->memcpyHtoDCount();
  ASSERT_TRUE(ctx->launchKernel(manifest(), k, moved, stream).ok());
  std::vector<KoptFakeEncodeCall> calls = hooks->callsSince(encodes);
  ASSERT_EQ(calls.size(), 1u);
  expectBf16Call(calls[0], moved[0], 32, 32, 16, kSwizzle64B);
  EXPECT_EQ(hooks->memcpyHtoDCount(), copies + 1);
  std::vector<uint64_t> params = hooks->lastLaunchParams();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[0], moved[0]);
  EXPECT_EQ(params[3], first[3]);
  EXPECT_EQ(params[4], first[4]);
  EXPECT_EQ(readMap(params[3]).globalAddress, moved[0]);
  EXPECT_EQ(readMap(params[4]).globalAddress, ptrs[1]);
}

TEST_F(TensorMapLaunch, PackArgsMapsDTypesRanksAndSwizzles) {
  // By hand: an f16 rank-3 and an f32 rank-1 map (no op validation here).
  KernelSpec k;
  k.name = "k";
  k.params = {{"x", Role::Input, DType::F16, {2, 4, 64}},
              {"y", Role::Input, DType::F32, {8}},
              {"result", Role::Output, DType::F32, {8}}};
  k.tensorMaps = {{"y", {4}, 0}, {"x", {64, 2, 1}, 128}};
  ASSERT_TRUE(validateTensorMaps(k, "k").ok());
  std::vector<DevicePtr> ptrs = {allocate(2 * 4 * 64 * 2), allocate(8 * 4),
                                 allocate(8 * 4)};
  size_t before = hooks->encodeCount();
  TensorMaps maps;
  Expected<ArgPack> pack = ctx->packArgs(k, ptrs, maps, nullptr);
  ASSERT_TRUE(pack.ok()) << pack.error();
  EXPECT_EQ(maps.uploads(), 2);

  std::vector<KoptFakeEncodeCall> calls = hooks->callsSince(before);
  ASSERT_EQ(calls.size(), 2u);
  const KoptFakeEncodeCall &y = calls[0], &x = calls[1];
  EXPECT_EQ(y.dataType, kFloat32);
  EXPECT_EQ(y.rank, 1u);
  EXPECT_EQ(y.globalAddress, ptrs[1]);
  EXPECT_EQ(y.globalDim[0], 8u);
  EXPECT_EQ(y.boxDim[0], 4u);
  EXPECT_EQ(y.swizzle, kSwizzleNone);
  EXPECT_EQ(x.dataType, kFloat16);
  EXPECT_EQ(x.rank, 3u);
  EXPECT_EQ(x.globalAddress, ptrs[0]);
  EXPECT_EQ(x.globalDim[0], 64u);
  EXPECT_EQ(x.globalDim[1], 4u);
  EXPECT_EQ(x.globalDim[2], 2u);
  EXPECT_EQ(x.globalStrides[0], 128u); // 64 x 2 bytes
  EXPECT_EQ(x.globalStrides[1], 512u); // 4 x 128 bytes
  EXPECT_EQ(x.boxDim[0], 64u);
  EXPECT_EQ(x.boxDim[1], 2u);
  EXPECT_EQ(x.boxDim[2], 1u);
  EXPECT_EQ(x.swizzle, kSwizzle128B);
  for (const KoptFakeEncodeCall &c : calls) {
    EXPECT_EQ(c.result, 0);
    EXPECT_EQ(c.interleave, kInterleaveNone);
    EXPECT_EQ(c.l2Promotion, kL2Promotion256B);
    EXPECT_EQ(c.oobFill, kOobFillNone);
    for (uint32_t i = 0; i < c.rank; ++i)
      EXPECT_EQ(c.elementStrides[i], 1u);
  }

  // kernelParams: the three pointers, then the maps in tensor_maps order.
  ASSERT_EQ(pack->size(), 5u);
  ASSERT_EQ(maps.addresses().size(), 2u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(pack->value(i), ptrs[i]);
  EXPECT_EQ(pack->value(3), maps.addresses()[0]);
  EXPECT_EQ(pack->value(4), maps.addresses()[1]);
  EXPECT_EQ(readMap(maps.addresses()[0]).globalAddress, ptrs[1]);
  EXPECT_EQ(readMap(maps.addresses()[1]).globalAddress, ptrs[0]);

  // Binding the same pointers again changes nothing.
  Expected<ArgPack> again = ctx->packArgs(k, ptrs, maps, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(maps.uploads(), 2);
  EXPECT_EQ(hooks->encodeCount(), before + 2);
}

TEST_F(TensorMapLaunch, NoMapsNoEncode) {
  KernelSpec k;
  k.name = "add";
  k.params = {{"lhs", Role::Input, DType::F32, {4}},
              {"rhs", Role::Input, DType::F32, {4}},
              {"result", Role::Output, DType::F32, {4}}};
  std::vector<DevicePtr> ptrs = {allocate(16), allocate(16), allocate(16)};
  size_t before = hooks->encodeCount();
  TensorMaps maps;
  Expected<ArgPack> pack = ctx->packArgs(k, ptrs, maps, nullptr);
  ASSERT_TRUE(pack.ok()) << pack.error();
  EXPECT_EQ(pack->size(), 3u);
  EXPECT_TRUE(maps.addresses().empty());
  EXPECT_EQ(hooks->encodeCount(), before);
}

TEST_F(TensorMapLaunch, MisalignedAddress) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ptrs[1] += 8;
  size_t before = hooks->encodeCount();
  TensorMaps maps;
  Expected<ArgPack> pack = ctx->packArgs(k, ptrs, maps, nullptr);
  ASSERT_FALSE(pack.ok());
  EXPECT_NE(pack.error().find("kernel 'matmul_tma_bf16': tensor map 1 ('b'): "
                              "the address 0x"),
            std::string::npos)
      << pack.error();
  EXPECT_NE(pack.error().find(" bound to 'b' is not 16-byte aligned"),
            std::string::npos)
      << pack.error();
  // Map 0 was fine and encoded; map 1 never reached the driver.
  EXPECT_EQ(hooks->encodeCount(), before + 1);
  Status launched = ctx->launchKernel(manifest(), k, ptrs, stream);
  EXPECT_FALSE(launched.ok());
}

TEST_F(TensorMapLaunch, EncodeFailureNamesKernelTensorAndCUresult) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ptrs[0] = allocate(64); // 'a' needs 3072 bytes: the fake driver refuses
  TensorMaps maps;
  Expected<ArgPack> pack = ctx->packArgs(k, ptrs, maps, nullptr);
  ASSERT_FALSE(pack.ok());
  EXPECT_NE(pack.error().find(
                "cuTensorMapEncodeTiled(kernel 'matmul_tma_bf16', tensor "
                "'a'): CUDA_ERROR_INVALID_VALUE (invalid argument) [bf16, "
                "dims {48, 32}, byte strides {96}, box {32, 16}, swizzle 64, "
                "address 0x"),
            std::string::npos)
      << pack.error();
}

TEST_F(TensorMapLaunch, BindChecksItsArguments) {
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  TensorMaps maps;
  Status s = maps.bind(*ctx, k, {1, 2}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "kernel 'matmul_tma_bf16' takes 3 parameters, got 2 pointers");
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ptrs[0] = 0;
  s = maps.bind(*ctx, k, ptrs, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kernel 'matmul_tma_bf16': tensor map 0 ('a'): the "
                         "address bound to 'a' is null");
  // A map the manifest rules reject (built by hand) never reaches the driver.
  KernelSpec bad = k;
  bad.tensorMaps[1].box[0] = 512;
  size_t before = hooks->encodeCount();
  s = maps.bind(*ctx, bad, allocateFor(k.params, 1.0f), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kernel 'matmul_tma_bf16': tensor_maps[1].box[0]: "
                         "512 is out of range (1 to 256)");
  EXPECT_EQ(hooks->encodeCount(), before + 1); // map 0 only
}

TEST_F(TensorMapLaunch, RunFunction) {
  // forward: matmul_tma_bf16 into out0, then the split-K one into out1 with a
  // workspace buffer (zeroed by runFunction: fresh fake memory is not, and
  // the fake kernel leaves out1 unwritten on a non-zero workspace).
  const FunctionSpec &f = manifest().functions[0];
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  std::vector<DevicePtr> args = allocateFor(k.params, 2.0f);
  args.push_back(allocate(32 * 40 * 4));
  size_t before = hooks->encodeCount();
  ASSERT_TRUE(ctx->runFunction(manifest(), f, args, stream).ok());
  EXPECT_EQ(hooks->encodeCount(), before + 4); // two kernels, two maps each
  for (int i : {2, 3}) {
    std::vector<float> out(32 * 40);
    ASSERT_TRUE(ctx->copyToHost(out.data(), args[i], 32 * 40 * 4).ok());
    EXPECT_EQ(out[0], 4.0f * 48) << "out" << i - 2;
    EXPECT_EQ(out.back(), 4.0f * 48) << "out" << i - 2;
  }
  std::vector<uint64_t> params = hooks->lastLaunchParams();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(readMap(params[4]).globalAddress, args[0]);

  // Again with the same arguments: the maps are kept, nothing is encoded.
  ASSERT_TRUE(ctx->runFunction(manifest(), f, args, stream).ok());
  EXPECT_EQ(hooks->encodeCount(), before + 4);
}

namespace {
/// Whether this run's fake driver has cuFuncGetParamInfo (CTest sets
/// KOPT_TEST_NO_PARAM_INFO=1 with the fake built without it).
bool expectParamInfo() {
  return std::getenv("KOPT_TEST_NO_PARAM_INFO") == nullptr;
}
} // namespace

TEST_F(TensorMapLaunch, ParamCountMatches) {
  ASSERT_EQ(canCountKernelParams(), expectParamInfo());
  if (!expectParamInfo())
    GTEST_SKIP() << "the driver has no cuFuncGetParamInfo";
  // a, b, result and two maps; the same after the split-K workspace.
  for (const char *name : {"matmul_tma_bf16", "matmul_tma_splitk_bf16"}) {
    const KernelSpec &k = *manifest().findKernel(name);
    Expected<Function> fn = ctx->getFunction(manifest().ptxPath, k);
    ASSERT_TRUE(fn.ok()) << fn.error();
    Expected<std::optional<size_t>> count = ctx->countKernelParams(*fn);
    ASSERT_TRUE(count.ok()) << count.error();
    ASSERT_TRUE(count->has_value());
    EXPECT_EQ(**count, k.numLaunchParams()) << name;
  }
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  ASSERT_TRUE(
      ctx->launchKernel(manifest(), k, allocateFor(k.params, 1.0f), stream)
          .ok());
}

TEST_F(TensorMapLaunch, ParamCountMismatchFailsBeforeLaunch) {
  ASSERT_EQ(canCountKernelParams(), expectParamInfo());
  if (!expectParamInfo())
    GTEST_SKIP() << "the driver has no cuFuncGetParamInfo";
  const KernelSpec &k = *manifest().findKernel("matmul_tma_bf16");
  const std::string entry =
      "kernel 'matmul_tma_bf16': the PTX entry takes 5 parameters, the "
      "manifest lists ";
  // tensor_maps removed, truncated, one too many.
  KernelSpec removed = k, truncated = k, extra = k;
  removed.tensorMaps.clear();
  truncated.tensorMaps.pop_back();
  extra.tensorMaps.push_back(k.tensorMaps[1]);
  struct Case {
    const KernelSpec *kernel;
    std::string message;
  };
  for (const Case &c : {Case{&removed, entry + "3 params and no tensor maps"},
                        Case{&truncated, entry + "3 params and 1 tensor map"},
                        Case{&extra, entry + "3 params and 3 tensor maps"}}) {
    Expected<Function> fn = ctx->getFunction(manifest().ptxPath, *c.kernel);
    ASSERT_FALSE(fn.ok());
    EXPECT_EQ(fn.error(), c.message);
  }
  // launchKernel refuses it before encoding a map or launching.
  std::vector<DevicePtr> ptrs = allocateFor(k.params, 1.0f);
  ASSERT_TRUE(ctx->launchKernel(manifest(), k, ptrs, stream).ok());
  std::vector<uint64_t> last = hooks->lastLaunchParams();
  size_t encodes = hooks->encodeCount();
  Status s = ctx->launchKernel(manifest(), truncated, ptrs, stream);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), entry + "3 params and 1 tensor map");
  EXPECT_EQ(hooks->encodeCount(), encodes);
  EXPECT_EQ(hooks->lastLaunchParams(), last);
  // A kernel without maps whose entry takes more than it lists.
  Expected<Manifest> stale = kopt::test::loadFakeManifest("stale");
  ASSERT_TRUE(stale.ok()) << stale.error();
  Expected<Function> fn = ctx->getFunction(stale->ptxPath, stale->kernels[0]);
  ASSERT_FALSE(fn.ok());
  EXPECT_EQ(fn.error(), "kernel 'add_bcast_f32_stale': the PTX entry takes 4 "
                        "parameters, the manifest lists 3 params and no "
                        "tensor maps");
}

TEST_F(TensorMapLaunch, ParamCountSkippedWithoutTheSymbol) {
  ASSERT_EQ(canCountKernelParams(), expectParamInfo());
  if (expectParamInfo())
    GTEST_SKIP() << "the driver has cuFuncGetParamInfo";
  // An older driver: nothing to count with, so nothing is refused.
  Expected<Manifest> stale = kopt::test::loadFakeManifest("stale");
  ASSERT_TRUE(stale.ok()) << stale.error();
  Expected<Function> fn = ctx->getFunction(stale->ptxPath, stale->kernels[0]);
  ASSERT_TRUE(fn.ok()) << fn.error();
  Expected<std::optional<size_t>> count = ctx->countKernelParams(*fn);
  ASSERT_TRUE(count.ok()) << count.error();
  EXPECT_FALSE(count->has_value());
  KernelSpec removed = *manifest().findKernel("matmul_tma_bf16");
  removed.tensorMaps.clear();
  EXPECT_TRUE(ctx->getFunction(manifest().ptxPath, removed).ok());
}
