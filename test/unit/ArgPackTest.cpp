//===- ArgPackTest.cpp - Kernel argument packing
//---------------------------===//

#include "kopt/Runtime/ArgPack.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kopt::rt;

namespace {
KernelSpec addKernel() {
  KernelSpec k;
  k.name = "add_0";
  k.params = {{"lhs", Role::Input, DType::F32, {4}},
              {"rhs", Role::Input, DType::F32, {4}},
              {"result", Role::Output, DType::F32, {4}}};
  k.ops = {opOverParams(OpKind::Add, {}, k.params)};
  return k;
}
} // namespace

TEST(ArgPack, PacksPointersInOrder) {
  KernelSpec k = addKernel();
  std::vector<uint64_t> ptrs = {0x7f0000001000, 0x7f0000002000, 0x7f0000003000};
  Expected<ArgPack> pack = ArgPack::create(k, ptrs);
  ASSERT_TRUE(pack.ok()) << pack.error();
  ASSERT_EQ(pack->size(), 3u);
  void **args = pack->data();
  for (size_t i = 0; i < ptrs.size(); ++i) {
    // cuLaunchKernel reads 8 bytes (the .u64 parameter) through args[i].
    uint64_t v;
    std::memcpy(&v, args[i], sizeof(v));
    EXPECT_EQ(v, ptrs[i]);
    EXPECT_EQ(pack->value(i), ptrs[i]);
  }
}

TEST(ArgPack, SurvivesMove) {
  KernelSpec k = addKernel();
  Expected<ArgPack> pack = ArgPack::create(k, {1, 2, 3});
  ASSERT_TRUE(pack.ok());
  ArgPack moved = pack.take();
  ArgPack again = std::move(moved);
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(*static_cast<uint64_t *>(again.data()[0]), 1u);
  EXPECT_EQ(*static_cast<uint64_t *>(again.data()[2]), 3u);
}

TEST(ArgPack, CountMismatch) {
  KernelSpec k = addKernel();
  Expected<ArgPack> pack = ArgPack::create(k, {1, 2});
  ASSERT_FALSE(pack.ok());
  EXPECT_EQ(pack.error(), "kernel 'add_0' takes 3 parameters, got 2 pointers");
  EXPECT_FALSE(ArgPack::create(k, {1, 2, 3, 4}).ok());
}

TEST(ArgPack, NullPointer) {
  KernelSpec k = addKernel();
  Expected<ArgPack> pack = ArgPack::create(k, {1, 0, 3});
  ASSERT_FALSE(pack.ok());
  EXPECT_EQ(pack.error(),
            "kernel 'add_0': parameter 1 ('rhs') is a null pointer");
}

TEST(ArgPack, PacksTensorMapsAfterParams) {
  KernelSpec k = addKernel();
  k.tensorMaps = {{"rhs", {4}, 0}, {"lhs", {4}, 0}};
  Expected<ArgPack> pack = ArgPack::create(k, {1, 2, 3}, {0x1000, 0x2000});
  ASSERT_TRUE(pack.ok()) << pack.error();
  ASSERT_EQ(pack->size(), 5u);
  const uint64_t expected[] = {1, 2, 3, 0x1000, 0x2000};
  for (size_t i = 0; i < 5; ++i) {
    uint64_t v;
    std::memcpy(&v, pack->data()[i], sizeof(v));
    EXPECT_EQ(v, expected[i]);
  }
}

TEST(ArgPack, TensorMapCountMismatch) {
  KernelSpec k = addKernel();
  k.tensorMaps = {{"lhs", {4}, 0}};
  Expected<ArgPack> pack = ArgPack::create(k, {1, 2, 3});
  ASSERT_FALSE(pack.ok());
  EXPECT_EQ(pack.error(),
            "kernel 'add_0' has 1 tensor maps, got 0 map addresses");
  EXPECT_FALSE(ArgPack::create(addKernel(), {1, 2, 3}, {4}).ok());
}

TEST(ArgPack, NullTensorMap) {
  KernelSpec k = addKernel();
  k.tensorMaps = {{"lhs", {4}, 0}};
  Expected<ArgPack> pack = ArgPack::create(k, {1, 2, 3}, {0});
  ASSERT_FALSE(pack.ok());
  EXPECT_EQ(pack.error(),
            "kernel 'add_0': tensor map 0 ('lhs') is a null pointer");
}
