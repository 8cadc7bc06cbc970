//===- ManifestTest.cpp - The manifest library: read, validate, write -----===//

#include "kopt/Manifest/Manifest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

using namespace kopt::manifest;
using json = nlohmann::json;

namespace {

/// A valid manifest with one kernel of each kind and a function that chains
/// two of them through an intermediate buffer.
const char *const kValid = R"({
  "kopt_manifest_version": 2,
  "chip": "sm_90a",
  "ptx": "model.ptx",
  "kernels": [
    {
      "name": "matmul_0", "class": "matmul", "ops": [{"op": "matmul", "attrs": {"transpose_a": false, "transpose_b": true}, "operands": {"a": "a", "b": "b"}, "result": "result"}],
      "params": [
        {"name": "a", "role": "input", "dtype": "bf16", "shape": [128, 64]},
        {"name": "b", "role": "input", "dtype": "bf16", "shape": [256, 64]},
        {"name": "result", "role": "output", "dtype": "f32", "shape": [128, 256]}
      ],
      "grid": [2, 1, 1], "block": [384, 1, 1], "dynamic_shared_bytes": 98304
    },
    {
      "name": "add_1", "class": "elementwise", "ops": [{"op": "add", "attrs": {}, "operands": {"lhs": "lhs", "rhs": "rhs"}, "result": "result"}],
      "params": [
        {"name": "lhs", "role": "input", "dtype": "f32", "shape": [128, 256]},
        {"name": "rhs", "role": "input", "dtype": "f32", "shape": [256]},
        {"name": "result", "role": "output", "dtype": "f32", "shape": [128, 256]}
      ],
      "grid": [128, 1, 1], "block": [256, 1, 1], "dynamic_shared_bytes": 0
    },
    {
      "name": "layernorm_2", "class": "row", "ops": [{"op": "layernorm", "attrs": {"eps": 1e-5}, "operands": {"input": "input", "weight": "weight", "bias": "bias"}, "result": "result"}],
      "params": [
        {"name": "input", "role": "input", "dtype": "f32", "shape": [128, 256]},
        {"name": "weight", "role": "input", "dtype": "f32", "shape": [256]},
        {"name": "bias", "role": "input", "dtype": "f32", "shape": [256]},
        {"name": "result", "role": "output", "dtype": "bf16", "shape": [128, 256]}
      ],
      "grid": [128, 1, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 0
    },
    {
      "name": "gelu_3", "class": "elementwise", "ops": [{"op": "gelu", "attrs": {"approximate": "tanh"}, "operands": {"input": "input"}, "result": "result"}],
      "params": [
        {"name": "input", "role": "input", "dtype": "f16", "shape": [8]},
        {"name": "result", "role": "output", "dtype": "f16", "shape": [8]}
      ],
      "grid": [1, 1, 1], "block": [32, 1, 1], "dynamic_shared_bytes": 0
    },
    {
      "name": "reduce_4", "class": "row", "ops": [{"op": "reduce", "attrs": {"kind": "mean"}, "operands": {"input": "input"}, "result": "result"}],
      "params": [
        {"name": "input", "role": "input", "dtype": "f32", "shape": [4, 8]},
        {"name": "result", "role": "output", "dtype": "f32", "shape": [4, 1]}
      ],
      "grid": [4, 1, 1], "block": [32, 1, 1], "dynamic_shared_bytes": 0
    }
  ],
  "functions": [
    {
      "name": "forward",
      "args": [
        {"name": "arg0", "role": "input", "dtype": "bf16", "shape": [128, 64]},
        {"name": "arg1", "role": "input", "dtype": "bf16", "shape": [256, 64]},
        {"name": "arg2", "role": "input", "dtype": "f32", "shape": [256]},
        {"name": "out0", "role": "output", "dtype": "f32", "shape": [128, 256]}
      ],
      "buffers": [{"id": 0, "dtype": "f32", "shape": [128, 256]}],
      "launches": [
        {"kernel": "matmul_0", "args": [{"arg": 0}, {"arg": 1}, {"buffer": 0}]},
        {"kernel": "add_1", "args": [{"buffer": 0}, {"arg": 2}, {"arg": 3}]}
      ]
    }
  ]
})";

json valid() { return json::parse(kValid); }

/// Parses `doc` and expects a failure whose message contains `expected`.
void expectError(const json &doc, const std::string &expected) {
  Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
  ASSERT_FALSE(m.ok()) << "parsed although it should fail with: " << expected;
  EXPECT_NE(m.error().find(expected), std::string::npos)
      << "message: " << m.error() << "\nexpected to contain: " << expected;
  EXPECT_EQ(m.error().rfind("t.json: ", 0), 0u)
      << "message does not start with the file name: " << m.error();
}

} // namespace

TEST(Manifest, DTypes) {
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_EQ(parseDType("f16"), DType::F16);
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_FALSE(parseDType("f64").has_value());
  EXPECT_EQ(dtypeSize(DType::F32), 4);
  EXPECT_EQ(dtypeSize(DType::F16), 2);
  EXPECT_EQ(dtypeSize(DType::BF16), 2);
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
}

TEST(Manifest, Sizes) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({4096, 32000}), 131072000);
  // 64-bit: 2^31 elements of f32 is 8 GiB.
  EXPECT_EQ(numBytes({65536, 32768}, DType::F32), int64_t(1) << 33);
  EXPECT_EQ(shapeToString({4096, 32000}), "[4096, 32000]");
  EXPECT_EQ(shapeToString({}), "[]");
}

TEST(Manifest, ParsesValid) {
  Expected<Manifest> m = parseManifest(kValid, "t.json", "out/dir");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->version, 2);
  EXPECT_EQ(m->chip, "sm_90a");
  EXPECT_EQ(m->ptx, "model.ptx");
  EXPECT_EQ(m->ptxPath, "out/dir/model.ptx");
  ASSERT_EQ(m->kernels.size(), 5u);

  const KernelSpec &mm = m->kernels[0];
  EXPECT_EQ(mm.name, "matmul_0");
  EXPECT_EQ(mm.cls, KernelClass::Matmul);
  EXPECT_EQ(mm.ops[0].kind, OpKind::Matmul);
  EXPECT_FALSE(mm.ops[0].attrs.transposeA);
  EXPECT_TRUE(mm.ops[0].attrs.transposeB);
  ASSERT_EQ(mm.params.size(), 3u);
  EXPECT_EQ(mm.params[2].name, "result");
  EXPECT_EQ(mm.params[2].role, Role::Output);
  EXPECT_EQ(mm.params[2].dtype, DType::F32);
  EXPECT_EQ(mm.params[2].shape, (Shape{128, 256}));
  EXPECT_EQ(mm.params[0].numBytes(), 128 * 64 * 2);
  EXPECT_EQ(mm.totalParamBytes(), 128 * 64 * 2 + 256 * 64 * 2 + 128 * 256 * 4);
  EXPECT_EQ(mm.grid, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(mm.block, (std::array<uint32_t, 3>{384, 1, 1}));
  EXPECT_EQ(mm.dynamicSharedBytes, 98304u);
  EXPECT_NE(mm.findParam("b"), nullptr);
  EXPECT_EQ(mm.findParam("lhs"), nullptr);

  EXPECT_EQ(m->kernels[1].ops[0].kind, OpKind::Add);
  EXPECT_EQ(m->kernels[2].ops[0].kind, OpKind::LayerNorm);
  EXPECT_DOUBLE_EQ(m->kernels[2].ops[0].attrs.eps, 1e-5);
  EXPECT_EQ(m->kernels[3].ops[0].attrs.approximate, GeluApproximation::Tanh);
  EXPECT_EQ(m->kernels[4].ops[0].attrs.reduceKind, ReduceKind::Mean);

  ASSERT_EQ(m->functions.size(), 1u);
  const FunctionSpec &f = m->functions[0];
  EXPECT_EQ(f.name, "forward");
  EXPECT_EQ(f.args.size(), 4u);
  ASSERT_EQ(f.buffers.size(), 1u);
  EXPECT_NE(f.findBuffer(0), nullptr);
  ASSERT_EQ(f.launches.size(), 2u);
  EXPECT_EQ(f.launches[0].kernel, "matmul_0");
  EXPECT_EQ(f.launches[0].args[2].kind, LaunchArg::Kind::Buffer);
  EXPECT_EQ(f.launches[1].args[1].kind, LaunchArg::Kind::Arg);
  EXPECT_EQ(f.launches[1].args[1].index, 2);
  EXPECT_EQ(m->findKernel("add_1"), &m->kernels[1]);
  EXPECT_EQ(m->findKernel("nope"), nullptr);
}

TEST(Manifest, LoadsFileAndResolvesPtx) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/kopt_manifest_test.json";
  {
    std::ofstream out(path);
    out << kValid;
  }
  Expected<Manifest> m = loadManifest(path);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->sourceName, path);
  EXPECT_NE(m->ptxPath.find("model.ptx"), std::string::npos);
  EXPECT_NE(m->ptxPath, "model.ptx"); // resolved against the folder
  std::remove(path.c_str());
}

TEST(Manifest, DocExampleParses) {
  // The example of docs/manifest.md, kept in test/unit/Inputs.
  Expected<Manifest> m =
      loadManifest(std::string(KOPT_TEST_INPUTS) + "/softmax.json");
  ASSERT_TRUE(m.ok()) << m.error();
  ASSERT_EQ(m->kernels.size(), 1u);
  EXPECT_EQ(m->kernels[0].ops[0].kind, OpKind::Softmax);
  EXPECT_EQ(m->kernels[0].params[0].numElements(), 4096LL * 32000);
}

TEST(ManifestErrors, MissingFile) {
  Expected<Manifest> m = loadManifest("/nonexistent/dir/m.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("/nonexistent/dir/m.json: cannot open manifest"),
            std::string::npos)
      << m.error();
}

TEST(ManifestErrors, BadJson) {
  Expected<Manifest> m = parseManifest("{\"kernels\": [", "t.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("t.json: invalid JSON: parse error at line 1"),
            std::string::npos)
      << m.error();

  Expected<Manifest> file =
      loadManifest(std::string(KOPT_TEST_INPUTS) + "/bad-json.json");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().find("bad-json.json: invalid JSON"), std::string::npos)
      << file.error();
}

TEST(ManifestErrors, NotAnObject) {
  expectError(json::array(), "the manifest must be a JSON object");
}

TEST(ManifestErrors, WrongVersion) {
  json doc = valid();
  doc["kopt_manifest_version"] = 3;
  expectError(doc, "kopt_manifest_version: unsupported version 3");
  // Version 1 (one `op` per kernel) is not read: re-compile.
  doc["kopt_manifest_version"] = 1;
  expectError(doc, "kopt_manifest_version: version 1 is no longer read "
                   "(this runtime reads version 2, where each kernel lists "
                   "its ops); re-compile the module with kopt-opt");
  doc["kopt_manifest_version"] = "1";
  expectError(doc, "kopt_manifest_version: must be an integer, got a string");
  doc.erase("kopt_manifest_version");
  expectError(doc, "kopt_manifest_version: missing field");
}

TEST(ManifestErrors, MissingFields) {
  for (const char *field : {"chip", "ptx", "kernels", "functions"}) {
    json doc = valid();
    doc.erase(field);
    expectError(doc, std::string(field) + ": missing field");
  }
  for (const char *field :
       {"class", "ops", "params", "grid", "block", "dynamic_shared_bytes"}) {
    json doc = valid();
    doc["kernels"][1].erase(field);
    expectError(doc,
                std::string("kernels[1] (add_1).") + field + ": missing field");
  }
  json doc = valid();
  doc["kernels"][1].erase("name");
  expectError(doc, "kernels[1].name: missing field");
  doc = valid();
  doc["kernels"][0]["params"][1].erase("shape");
  expectError(doc, "kernels[0] (matmul_0).params[1].shape: missing field");
  doc = valid();
  doc["functions"][0]["launches"][0].erase("kernel");
  expectError(doc, "functions[0] (forward).launches[0].kernel: missing field");
}

TEST(ManifestErrors, UnknownDType) {
  json doc = valid();
  doc["kernels"][3]["params"][1]["dtype"] = "f64";
  expectError(doc, "kernels[3] (gelu_3).params[1].dtype: unknown dtype 'f64' "
                   "(expected f32, f16 or bf16)");
  doc = valid();
  doc["functions"][0]["buffers"][0]["dtype"] = "int8";
  expectError(doc, "functions[0] (forward).buffers[0].dtype: unknown dtype");
}

TEST(ManifestErrors, BadDims) {
  json doc = valid();
  doc["kernels"][3]["params"][0]["shape"] = {-8};
  expectError(doc, "kernels[3] (gelu_3).params[0].shape[0]: dimension -8 "
                   "must be positive");
  doc["kernels"][3]["params"][0]["shape"] = {0};
  expectError(doc, "shape[0]: dimension 0 must be positive");
  doc["kernels"][3]["params"][0]["shape"] = {2.5};
  expectError(doc, "shape[0]: must be an integer, got a number");
  doc["kernels"][3]["params"][0]["shape"] = {int64_t(1) << 40, int64_t(1)
                                                                   << 40};
  expectError(doc, "params[0].shape: too many elements");
}

TEST(ManifestErrors, LaunchDims) {
  json doc = valid();
  doc["kernels"][1]["grid"] = {1, 1};
  expectError(doc, "kernels[1] (add_1).grid: must have 3 entries");
  doc = valid();
  doc["kernels"][1]["block"] = {2048, 1, 1};
  expectError(doc, "kernels[1] (add_1).block[0]: value 2048 out of range");
  doc = valid();
  doc["kernels"][1]["block"] = {512, 4, 1};
  expectError(doc, "kernels[1] (add_1).block: 2048 threads per block");
  doc = valid();
  doc["kernels"][1]["dynamic_shared_bytes"] = -1;
  expectError(doc, "dynamic_shared_bytes: value -1 out of range");
}

TEST(Manifest, Cluster) {
  // Absent: no cluster; written only when there is one.
  json doc = valid();
  Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->kernels[1].cluster, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_FALSE(
      json::parse(writeManifest(*m))["kernels"][1].contains("cluster"));
  doc["kernels"][1]["grid"] = {16, 1, 1};
  doc["kernels"][1]["cluster"] = {8, 1, 1};
  m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  ASSERT_TRUE(validateManifest(*m, "t.json").ok());
  EXPECT_EQ(m->kernels[1].cluster, (std::array<uint32_t, 3>{8, 1, 1}));
  EXPECT_EQ(json::parse(writeManifest(*m))["kernels"][1]["cluster"],
            json({8, 1, 1}));
}

TEST(ManifestErrors, Cluster) {
  json doc = valid();
  doc["kernels"][1]["grid"] = {16, 1, 1};
  doc["kernels"][1]["cluster"] = {8, 1};
  expectError(doc, "kernels[1] (add_1).cluster: must have 3 entries");
  doc["kernels"][1]["cluster"] = {0, 1, 1};
  expectError(doc, "kernels[1] (add_1).cluster[0]: value 0 out of range");
  doc["kernels"][1]["cluster"] = {16, 1, 1};
  expectError(doc, "kernels[1] (add_1).cluster[0]: value 16 out of range");
  doc["kernels"][1]["cluster"] = {4, 4, 1};
  expectError(doc, "kernels[1] (add_1).cluster: 16 blocks per cluster (at "
                   "most 8)");
  doc["kernels"][1]["grid"] = {12, 1, 1};
  doc["kernels"][1]["cluster"] = {8, 1, 1};
  expectError(doc, "kernels[1] (add_1).grid[0]: 12 blocks, not a multiple "
                   "of the cluster's 8");
}

TEST(ManifestErrors, UnknownOpClassRole) {
  json doc = valid();
  doc["kernels"][1]["ops"][0]["op"] = "conv";
  expectError(doc, "kernels[1] (add_1).ops[0].op: unknown op 'conv'");
  doc = valid();
  doc["kernels"][1]["class"] = "attention";
  expectError(doc, "kernels[1] (add_1).class: unknown class 'attention'");
  doc = valid();
  doc["kernels"][1]["params"][0]["role"] = "inout";
  expectError(doc, "params[0].role: unknown role 'inout'");
}

TEST(ManifestErrors, Attrs) {
  json doc = valid();
  doc["kernels"][0]["ops"][0]["attrs"].erase("transpose_b");
  expectError(doc,
              "kernels[0] (matmul_0).ops[0].attrs.transpose_b: missing field");
  doc = valid();
  doc["kernels"][0]["ops"][0]["attrs"]["transpose_a"] = 1;
  expectError(doc, "attrs.transpose_a: must be a boolean, got an integer");
  doc = valid();
  doc["kernels"][3]["ops"][0]["attrs"]["approximate"] = "fast";
  expectError(doc, "attrs.approximate: unknown value 'fast'");
  doc = valid();
  doc["kernels"][4]["ops"][0]["attrs"]["kind"] = "prod";
  expectError(doc, "attrs.kind: unknown reduction 'prod'");
  doc = valid();
  doc["kernels"][2]["ops"][0]["attrs"].erase("eps");
  expectError(doc, "kernels[2] (layernorm_2).ops[0].attrs.eps: missing field");
  doc = valid();
  doc["kernels"][2]["ops"][0]["attrs"] = "eps";
  expectError(doc, "attrs: must be an object, got a string");
}

TEST(ManifestErrors, OpsGraph) {
  json doc = valid();
  doc["kernels"][1]["params"].erase(1); // add without its rhs parameter
  expectError(doc, "kernels[1] (add_1).ops[0].operands.rhs: no parameter or "
                   "value named 'rhs'");
  doc = valid();
  doc["kernels"][1]["ops"][0]["operands"].erase("rhs");
  expectError(doc, "kernels[1] (add_1).ops[0].operands: missing operand 'rhs' "
                   "(op add takes lhs, rhs)");
  doc = valid();
  doc["kernels"][1]["ops"][0]["operands"]["input"] = "lhs";
  expectError(doc, "kernels[1] (add_1).ops[0].operands.input: op add has no "
                   "operand 'input' (its operands are lhs, rhs)");
  doc = valid();
  doc["kernels"][1]["ops"][0]["operands"]["rhs"] = "lhs";
  expectError(doc, "kernels[1] (add_1).ops: no op reads input 'rhs'");
  doc = valid();
  doc["kernels"][1]["ops"][0]["result"] = "lhs";
  expectError(doc, "kernels[1] (add_1).ops[0].result: 'lhs' is an input "
                   "parameter; an op defines an output or a value");
  doc = valid();
  doc["kernels"][1]["params"][2]["role"] = "input";
  expectError(doc, "kernels[1] (add_1).ops[0].result: 'result' is an input "
                   "parameter");
  doc = valid();
  doc["kernels"][1]["params"][1]["name"] = "lhs";
  expectError(doc, "kernels[1] (add_1).params[1].name: duplicate name 'lhs'");
  doc = valid();
  doc["kernels"][3]["ops"] = json::array();
  expectError(doc, "kernels[3] (gelu_3).ops: a kernel computes at least one "
                   "op");
  doc = valid();
  doc["kernels"][3]["params"].push_back({{"name", "extra"},
                                         {"role", "output"},
                                         {"dtype", "f16"},
                                         {"shape", {8}}});
  expectError(doc, "kernels[3] (gelu_3).ops: no op defines output 'extra'");
  doc = valid();
  doc["kernels"][3]["ops"][0].erase("result");
  expectError(doc, "kernels[3] (gelu_3).ops[0].result: missing field");
  doc = valid();
  doc["kernels"][3]["ops"][0]["operands"] = json::array();
  expectError(doc, "kernels[3] (gelu_3).ops[0].operands: must be an object");
  // A version 1 kernel in a version 2 manifest.
  doc = valid();
  doc["kernels"][3]["op"] = "gelu";
  expectError(doc, "kernels[3] (gelu_3).op: a version 1 field: a version 2 "
                   "kernel lists its ops in 'ops'; re-compile the module with "
                   "kopt-opt");
  // Parameter names are free in version 2 (the ops name them).
  doc = valid();
  doc["kernels"][3]["params"][0]["name"] = "x";
  doc["kernels"][3]["ops"][0]["operands"]["input"] = "x";
  Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
  EXPECT_TRUE(m.ok()) << m.error();
}

namespace {
/// A kernel of three ops, matmul -> add bias -> gelu, through two internal
/// values: what a fusion pass emits.
const char *const kChain = R"({
  "name": "matmul_add_gelu_0", "class": "matmul",
  "ops": [
    {"op": "matmul", "attrs": {"transpose_a": false, "transpose_b": true},
     "operands": {"a": "x", "b": "w"}, "result": "t0"},
    {"op": "add", "operands": {"lhs": "t0", "rhs": "bias"}, "result": "t1"},
    {"op": "gelu", "attrs": {"approximate": "none"},
     "operands": {"input": "t1"}, "result": "y"}
  ],
  "values": [
    {"name": "t0", "dtype": "f32", "shape": [128, 256]},
    {"name": "t1", "dtype": "f32", "shape": [128, 256]}
  ],
  "params": [
    {"name": "x", "role": "input", "dtype": "bf16", "shape": [128, 64]},
    {"name": "w", "role": "input", "dtype": "bf16", "shape": [256, 64]},
    {"name": "bias", "role": "input", "dtype": "f32", "shape": [256]},
    {"name": "y", "role": "output", "dtype": "bf16", "shape": [128, 256]}
  ],
  "grid": [2, 1, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 0
})";

json withChain() {
  json doc = valid();
  doc["kernels"].push_back(json::parse(kChain));
  return doc;
}
} // namespace

TEST(Manifest, ParsesChain) {
  Expected<Manifest> m = parseManifest(withChain().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &k = m->kernels.back();
  ASSERT_EQ(k.ops.size(), 3u);
  EXPECT_EQ(k.singleOp(), nullptr);
  EXPECT_EQ(k.opsName(), "matmul+add+gelu");
  EXPECT_EQ(k.ops[0].kind, OpKind::Matmul);
  EXPECT_TRUE(k.ops[0].attrs.transposeB);
  EXPECT_EQ(*k.ops[0].operand("a"), "x");
  EXPECT_EQ(k.ops[1].result, "t1");
  EXPECT_EQ(k.ops[2].kind, OpKind::Gelu);
  ASSERT_EQ(k.values.size(), 2u);
  EXPECT_EQ(k.findValue("t0")->shape, (Shape{128, 256}));
  EXPECT_EQ(k.findParam("t0"), nullptr);
  EXPECT_EQ(k.findOp(OpKind::Add), &k.ops[1]);
  EXPECT_EQ(k.totalParamBytes(),
            128 * 64 * 2 + 256 * 64 * 2 + 256 * 4 + 128 * 256 * 2);
}

TEST(ManifestErrors, Chain) {
  json doc = withChain();
  std::swap(doc["kernels"][5]["ops"][0], doc["kernels"][5]["ops"][1]);
  expectError(doc, "kernels[5] (matmul_add_gelu_0).ops[0].operands.lhs: 't0' "
                   "is read before an op defines it (ops run in order)");
  doc = withChain();
  doc["kernels"][5]["ops"][2]["result"] = "t1";
  expectError(doc, "ops[2].result: 't1' is defined twice");
  doc = withChain();
  doc["kernels"][5]["values"][1]["shape"] = {128, 255};
  expectError(doc, "kernels[5] (matmul_add_gelu_0).ops[1]: op add: 't0' "
                   "[128, 256] and 'bias' [256] do not broadcast to 't1' "
                   "[128, 255]");
  doc = withChain();
  doc["kernels"][5]["values"].push_back(
      {{"name", "dead"}, {"dtype", "f32"}, {"shape", {1}}});
  expectError(doc, "ops: no op defines value 'dead'");
  doc = withChain();
  doc["kernels"][5]["ops"][2]["operands"]["input"] = "t0";
  expectError(doc, "ops: no op reads value 't1' (a value lives inside the "
                   "kernel; what is not read is dead)");
  doc = withChain();
  doc["kernels"][5]["values"][0]["name"] = "x";
  expectError(doc, "values[0].name: duplicate name 'x'");
  doc = withChain();
  doc["kernels"][5]["values"] = json::object();
  expectError(doc, "values: must be an array, got an object");
}

TEST(ManifestErrors, EpsRange) {
  // The rule the dialect's verifier applies too (epsError).
  EXPECT_FALSE(epsError(0.0).has_value());
  EXPECT_FALSE(epsError(1.0).has_value());
  EXPECT_EQ(epsError(2.0), "eps must be in [0, 1], got 2");
  EXPECT_TRUE(epsError(-1e-5).has_value());
  EXPECT_TRUE(epsError(std::nan("")).has_value());
  json doc = valid();
  doc["kernels"][2]["ops"][0]["attrs"]["eps"] = 2.0;
  expectError(doc, "kernels[2] (layernorm_2).ops[0].attrs.eps: eps must be in "
                   "[0, 1], got 2");
}

TEST(Manifest, Utf8) {
  EXPECT_TRUE(isValidUTF8("plain"));
  EXPECT_TRUE(isValidUTF8("\xc3\xa9t\xc3\xa9")); // été
  EXPECT_TRUE(isValidUTF8("\xf0\x9f\x98\x80"));  // U+1F600
  EXPECT_FALSE(isValidUTF8("\xff"));
  EXPECT_FALSE(isValidUTF8("a\xc3"));        // truncated
  EXPECT_FALSE(isValidUTF8("\xc0\xaf"));     // overlong
  EXPECT_FALSE(isValidUTF8("\xed\xa0\x80")); // a surrogate
  // Invalid bytes in a struct are a validation error, never a crash, and the
  // writer still writes (with U+FFFD).
  Expected<Manifest> m = parseManifest(kValid, "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  Manifest bad = *m;
  bad.functions[0].name = "fwd\xff";
  Status s = validateManifest(bad, "x.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "x.json: functions[0].name: not valid UTF-8 (JSON "
                         "strings must be); rename it");
  bad = *m;
  bad.kernels[1].params[0].name = "lhs\xfe";
  s = validateManifest(bad, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kernels[1] (add_1).params[0].name: not valid UTF-8 "
                         "(JSON strings must be); rename it");
  bad = *m;
  bad.ptx = "\xff.ptx";
  EXPECT_FALSE(validateManifest(bad, "").ok());
  EXPECT_NE(writeManifest(bad).find("\"ptx\": \"\xef\xbf\xbd.ptx\""),
            std::string::npos);
}

TEST(Manifest, WriterRoundTrips) {
  // What the compiler writes, the reader reads back unchanged.
  for (const json &doc : {valid(), withChain()}) {
    Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
    ASSERT_TRUE(m.ok()) << m.error();
    ASSERT_TRUE(validateManifest(*m, "t.json").ok());
    std::string text = writeManifest(*m);
    EXPECT_EQ(text.back(), '\n');
    Expected<Manifest> again = parseManifest(text, "w.json");
    ASSERT_TRUE(again.ok()) << again.error() << "\n" << text;
    EXPECT_EQ(writeManifest(*again), text);
    // Same content as the input (nlohmann::json compares objects by key).
    json written = json::parse(text);
    for (json &k : written["kernels"])
      for (json &op : k["ops"])
        if (op["attrs"].empty())
          op.erase("attrs");
    json input = doc;
    for (json &k : input["kernels"])
      for (json &op : k["ops"])
        if (op.contains("attrs") && op["attrs"].empty())
          op.erase("attrs");
    EXPECT_EQ(written, input);
  }
}

TEST(ManifestErrors, OperandShapes) {
  json doc = valid();
  doc["kernels"][0]["params"][1]["shape"] = {256, 32};
  expectError(doc, "kernels[0] (matmul_0).ops[0]: op matmul: contraction "
                   "sizes differ");
  doc = valid();
  doc["kernels"][0]["params"][2]["shape"] = {256, 128};
  expectError(doc, "op matmul: result must be [128, 256], got [256, 128]");
  doc = valid();
  doc["kernels"][0]["params"][1]["dtype"] = "f16";
  expectError(doc, "'a' and 'b' must have the same dtype");
  doc = valid();
  doc["kernels"][1]["params"][1]["shape"] = {128};
  expectError(doc, "op add: 'lhs' [128, 256] and 'rhs' [128] do not "
                   "broadcast to 'result' [128, 256]");
  doc = valid();
  doc["kernels"][3]["params"][1]["shape"] = {4};
  expectError(doc, "op gelu: 'input' [8] and 'result' [4] must have the same "
                   "shape");
  doc = valid();
  doc["kernels"][4]["params"][1]["shape"] = {8};
  expectError(doc, "op reduce: reducing 'input' [4, 8] over its last "
                   "dimension gives [4]");
  doc = valid();
  doc["kernels"][2]["params"][1]["shape"] = {128};
  expectError(doc, "op layernorm: 'weight' [128] must be [256]");
}

TEST(ManifestErrors, DuplicateKernel) {
  json doc = valid();
  doc["kernels"][1]["name"] = "matmul_0";
  expectError(doc, "kernels[1].name: duplicate kernel name 'matmul_0'");
}

TEST(ManifestErrors, LaunchReferences) {
  json doc = valid();
  doc["functions"][0]["launches"][0]["kernel"] = "missing_kernel";
  expectError(doc, "functions[0] (forward).launches[0].kernel: no kernel "
                   "named 'missing_kernel'");
  doc = valid();
  doc["functions"][0]["launches"][1]["args"][1] = {{"arg", 7}};
  expectError(doc, "functions[0] (forward).launches[1].args[1].arg: no "
                   "argument 7 (the function has 4)");
  doc = valid();
  doc["functions"][0]["launches"][0]["args"][2] = {{"buffer", 3}};
  expectError(doc, "launches[0].args[2].buffer: no buffer with id 3");
  doc = valid();
  doc["functions"][0]["launches"][0]["args"].erase(2);
  expectError(doc, "launches[0].args: kernel 'matmul_0' takes 3 parameters, "
                   "the launch passes 2");
  doc = valid();
  doc["functions"][0]["launches"][0]["args"][0] = {{"arg", 0}, {"buffer", 0}};
  expectError(doc, "launches[0].args[0]: must have exactly one of 'arg' and "
                   "'buffer'");
  doc = valid();
  doc["functions"][0]["launches"][0]["args"][0] = {{"arg", 2}};
  expectError(doc, "launches[0].args[0]: argument 2 is f32 [256] but kernel "
                   "parameter 'a' is bf16 [128, 64]");
  doc = valid();
  doc["functions"][0]["launches"][1]["args"][2] = {{"arg", 0}};
  expectError(doc, "kernel output parameter 'result' is bound to function "
                   "input argument 0");
  doc = valid();
  doc["functions"][0]["buffers"].push_back(
      {{"id", 0}, {"dtype", "f32"}, {"shape", {1}}});
  expectError(doc, "buffers[1].id: duplicate buffer id 0");
}

TEST(ManifestErrors, WrongTypes) {
  json doc = valid();
  doc["kernels"] = json::object();
  expectError(doc, "kernels: must be an array, got an object");
  doc = valid();
  doc["chip"] = 90;
  expectError(doc, "chip: must be a string, got an integer");
  doc = valid();
  doc["kernels"][0] = "matmul_0";
  expectError(doc, "kernels[0]: must be an object, got a string");
}

namespace {
/// The valid manifest plus a pack kernel (kopt-pack-operands' copy of a
/// row-major B [K, N] = [60, 100] into [N, K'] = [100, 64]).
json withPack() {
  json doc = valid();
  doc["kernels"].push_back(json::parse(R"({
    "name": "pack_0", "class": "pack", "ops": [{"op": "pack", "attrs": {"transpose": true}, "operands": {"input": "input"}, "result": "result"}],
    "params": [
      {"name": "input", "role": "input", "dtype": "bf16", "shape": [60, 100]},
      {"name": "result", "role": "output", "dtype": "bf16", "shape": [100, 64]}
    ],
    "grid": [4, 1, 1], "block": [256, 1, 1], "dynamic_shared_bytes": 0
  })"));
  return doc;
}
} // namespace

TEST(Manifest, ParsesPack) {
  Expected<Manifest> m = parseManifest(withPack().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &k = m->kernels.back();
  EXPECT_EQ(k.cls, KernelClass::Pack);
  EXPECT_EQ(k.ops[0].kind, OpKind::Pack);
  EXPECT_TRUE(k.ops[0].attrs.transpose);
  EXPECT_STREQ(kernelClassName(k.cls), "pack");
  EXPECT_STREQ(opName(k.ops[0].kind), "pack");
}

TEST(Manifest, ParsesLogAndLog1p) {
  // A fused chain log1p(log(x)): both are unary ops with one operand "input".
  json doc = valid();
  doc["kernels"].push_back(json::parse(R"({
    "name": "log_log1p_0", "class": "elementwise",
    "ops": [
      {"op": "log", "attrs": {}, "operands": {"input": "in0"}, "result": "t0"},
      {"op": "log1p", "attrs": {}, "operands": {"input": "t0"}, "result": "out0"}
    ],
    "values": [{"name": "t0", "dtype": "bf16", "shape": [4, 8]}],
    "params": [
      {"name": "in0", "role": "input", "dtype": "bf16", "shape": [4, 8]},
      {"name": "out0", "role": "output", "dtype": "bf16", "shape": [4, 8]}
    ],
    "grid": [1, 1, 1], "block": [32, 1, 1], "dynamic_shared_bytes": 0
  })"));
  Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &k = m->kernels.back();
  ASSERT_EQ(k.ops.size(), 2u);
  EXPECT_EQ(k.ops[0].kind, OpKind::Log);
  EXPECT_EQ(k.ops[1].kind, OpKind::Log1p);
  EXPECT_EQ(k.opsName(), "log+log1p");
  EXPECT_STREQ(opName(OpKind::Log), "log");
  EXPECT_STREQ(opName(OpKind::Log1p), "log1p");
  EXPECT_EQ(parseOpKind("log"), OpKind::Log);
  EXPECT_EQ(parseOpKind("log1p"), OpKind::Log1p);
  EXPECT_EQ(parseOpKind("log2"), std::nullopt);
  for (OpKind op : {OpKind::Log, OpKind::Log1p}) {
    EXPECT_TRUE(isUnaryOp(op));
    EXPECT_FALSE(isBinaryOp(op));
    size_t required = 0;
    EXPECT_EQ(operandNames(op, &required), std::vector<std::string>{"input"});
    EXPECT_EQ(required, 1u);
  }
  // Unary: a second operand is an error, as for tanh.
  json bad = doc;
  bad["kernels"].back()["ops"][1]["operands"]["rhs"] = "in0";
  expectError(bad, "op log1p has no operand 'rhs' (its operands are input)");
}

TEST(ManifestErrors, Pack) {
  json doc = withPack();
  doc["kernels"][5]["ops"][0]["attrs"].erase("transpose");
  expectError(doc, "kernels[5] (pack_0).ops[0].attrs.transpose: missing field");
  doc = withPack();
  doc["kernels"][5]["params"][1]["shape"] = {100, 59};
  expectError(doc, "op pack: 'result' [100, 59] is smaller than the "
                   "transposed 'input' [60, 100]");
  doc = withPack();
  doc["kernels"][5]["ops"][0]["attrs"]["transpose"] = false;
  expectError(doc, "op pack: 'result' [100, 64] is smaller than 'input' "
                   "[60, 100]");
  doc = withPack();
  doc["kernels"][5]["params"][1]["dtype"] = "f32";
  expectError(doc, "op pack: copies without conversion: 'input' is bf16, "
                   "'result' f32");
  doc = withPack();
  doc["kernels"][5]["params"][0]["shape"] = {6000};
  expectError(doc, "op pack: 'input' and 'result' must be 2-D");
}

namespace {
/// The valid manifest plus an f32 matmul that allows TF32 (`tf32`).
json withTf32() {
  json doc = valid();
  doc["kernels"].push_back(json::parse(R"({
    "name": "matmul_tf32_5", "class": "matmul", "ops": [{"op": "matmul", "attrs": {"transpose_a": false, "transpose_b": true, "tf32": true}, "operands": {"a": "a", "b": "b"}, "result": "result"}],
    "params": [
      {"name": "a", "role": "input", "dtype": "f32", "shape": [128, 64]},
      {"name": "b", "role": "input", "dtype": "f32", "shape": [256, 64]},
      {"name": "result", "role": "output", "dtype": "f32", "shape": [128, 256]}
    ],
    "grid": [2, 1, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 98304
  })"));
  return doc;
}
} // namespace

TEST(Manifest, ParsesTf32) {
  Expected<Manifest> m = parseManifest(withTf32().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &k = m->kernels.back();
  EXPECT_EQ(k.ops[0].kind, OpKind::Matmul);
  EXPECT_TRUE(k.ops[0].attrs.tf32);
  EXPECT_TRUE(k.ops[0].attrs.transposeB);
  // Reports show the attrs (the writer's form).
  EXPECT_EQ(json::parse(writeOpAttrs(k.ops[0]))["tf32"], true);
  // Absent: exact f32 semantics.
  EXPECT_FALSE(m->kernels[0].ops[0].attrs.tf32);
  json doc = withTf32();
  doc["kernels"][5]["ops"][0]["attrs"].erase("tf32");
  m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->kernels[5].ops[0].attrs.tf32);
  doc = withTf32();
  doc["kernels"][5]["ops"][0]["attrs"]["tf32"] = false;
  m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->kernels[5].ops[0].attrs.tf32);
  // tf32 false is fine on bf16 operands too.
  doc = valid();
  doc["kernels"][0]["ops"][0]["attrs"]["tf32"] = false;
  m = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->kernels[0].ops[0].attrs.tf32);
}

TEST(ManifestErrors, Tf32) {
  json doc = withTf32();
  doc["kernels"][5]["ops"][0]["attrs"]["tf32"] = "yes";
  expectError(
      doc, "kernels[5] (matmul_tf32_5).ops[0].attrs.tf32: must be a boolean, "
           "got a string");
  doc = withTf32();
  doc["kernels"][5]["ops"][0]["attrs"]["tf32"] = 1;
  expectError(doc, "attrs.tf32: must be a boolean, got an integer");
  doc = withTf32();
  doc["kernels"][5]["ops"][0]["attrs"]["tf32"] = nullptr;
  expectError(doc, "attrs.tf32: must be a boolean, got null");
  // Only f32 operands can be cut to TF32.
  doc = valid();
  doc["kernels"][0]["ops"][0]["attrs"]["tf32"] = true;
  expectError(
      doc, "kernels[0] (matmul_0).ops[0].attrs.tf32: tf32 needs f32 operands, "
           "'a' and 'b' are bf16");
  doc = withTf32();
  doc["kernels"][5]["params"][0]["dtype"] = "f16";
  doc["kernels"][5]["params"][1]["dtype"] = "f16";
  expectError(doc,
              "kernels[5] (matmul_tf32_5).ops[0].attrs.tf32: tf32 needs f32 "
              "operands, 'a' and 'b' are f16");
}

namespace {
/// The valid manifest with a split-K matmul: a workspace parameter bound to a
/// workspace buffer.
json withWorkspace() {
  json doc = valid();
  doc["kernels"][0]["params"].push_back({{"name", "workspace"},
                                         {"role", "workspace"},
                                         {"dtype", "f32"},
                                         {"shape", {32 + 2 * 128 * 256}}});
  doc["functions"][0]["buffers"].push_back({{"id", 1},
                                            {"role", "workspace"},
                                            {"dtype", "f32"},
                                            {"shape", {32 + 2 * 128 * 256}}});
  doc["functions"][0]["launches"][0]["args"].push_back({{"buffer", 1}});
  return doc;
}
} // namespace

TEST(Manifest, ParsesWorkspace) {
  Expected<Manifest> m = parseManifest(withWorkspace().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &mm = m->kernels[0];
  ASSERT_EQ(mm.params.size(), 4u);
  EXPECT_EQ(mm.params[3].role, Role::Workspace);
  EXPECT_STREQ(roleName(mm.params[3].role), "workspace");
  // Workspaces are not counted as traffic.
  EXPECT_EQ(mm.totalParamBytes(), (128 * 64 + 256 * 64) * 2 + 128 * 256 * 4);
  ASSERT_EQ(m->functions[0].buffers.size(), 2u);
  EXPECT_FALSE(m->functions[0].buffers[0].workspace);
  EXPECT_TRUE(m->functions[0].buffers[1].workspace);
}

TEST(ManifestErrors, Workspace) {
  json doc = withWorkspace();
  doc["functions"][0]["buffers"][1].erase("role");
  expectError(doc, "kernel workspace parameter 'workspace' is bound to buffer "
                   "1, which is not a workspace");
  doc = withWorkspace();
  doc["functions"][0]["launches"][0]["args"][2] = {{"buffer", 1}};
  doc["functions"][0]["launches"][0]["args"][3] = {{"buffer", 0}};
  expectError(doc, "workspace buffer 1 is bound to kernel parameter 'result'");
  doc = withWorkspace();
  doc["functions"][0]["buffers"][1]["role"] = "scratch";
  expectError(doc, "unknown buffer role 'scratch'");
  doc = withWorkspace();
  doc["kernels"][0]["params"][3]["role"] = "output";
  expectError(doc, "kernels[0] (matmul_0).ops: no op defines output "
                   "'workspace'");
  doc = withWorkspace();
  doc["functions"][0]["args"][0]["role"] = "workspace";
  expectError(doc, "workspaces are buffers");
  doc = valid();
  doc["kernels"][1]["params"].push_back({{"name", "workspace"},
                                         {"role", "workspace"},
                                         {"dtype", "f32"},
                                         {"shape", {8}}});
  expectError(doc, "kernels[1] (add_1).params: a workspace (split-K) needs "
                   "exactly one matmul in the kernel's ops, got 0");
}

TEST(ManifestErrors, WorkspaceShape) {
  auto withWs = [](json shape, const char *dtype) {
    json doc = withWorkspace();
    doc["kernels"][0]["params"][3]["shape"] = shape;
    doc["kernels"][0]["params"][3]["dtype"] = dtype;
    doc["functions"][0]["buffers"][1]["shape"] = shape;
    doc["functions"][0]["buffers"][1]["dtype"] = dtype;
    return doc;
  };
  expectError(withWs({5}, "f32"), "'workspace' must be 1-D f32 with at least "
                                  "32 + 2 x M x N = 65568 elements, got f32 "
                                  "[5]");
  expectError(withWs(json::array(), "f32"), "got f32 []");
  expectError(withWs({32 + 2 * 128 * 256}, "bf16"), "got bf16");
  json doc = withWorkspace();
  std::swap(doc["kernels"][0]["params"][2], doc["kernels"][0]["params"][3]);
  expectError(doc, "kernels[0] (matmul_0).params[2]: the workspace parameter "
                   "'workspace' must be the last parameter");
}

namespace {
/// The valid manifest with TMA tensor maps on matmul_0 (a bf16 [128, 64], b
/// bf16 [256, 64]).
json withTensorMaps() {
  json doc = valid();
  doc["kernels"][0]["tensor_maps"] = json::parse(R"([
    {"tensor": "a", "box": [64, 128], "swizzle": 128},
    {"tensor": "b", "box": [32, 256], "swizzle": 64}
  ])");
  return doc;
}
/// withTensorMaps() with tensor_maps[index][field] = value.
json withMapField(size_t index, const char *field, json value) {
  json doc = withTensorMaps();
  doc["kernels"][0]["tensor_maps"][index][field] = std::move(value);
  return doc;
}
/// What parsing a gelu with a well-formed map ends with: only a matmul takes
/// tensor maps.
const char *const kGeluTakesNoMaps =
    "kernels[3] (gelu_3).tensor_maps: op gelu takes no tensor maps (only a "
    "matmul whose schedule.copy is 'tma' or schedule.tma_store true has them), "
    "got 1";
/// The valid manifest with a map on gelu_3's input of `shape` and `dtype`
/// (the result gets the same shape): the map's own rules apply before the
/// kernel's (a gelu takes none).
json withGeluMap(json shape, const char *dtype, json box) {
  json doc = valid();
  json &k = doc["kernels"][3];
  k["params"][0]["shape"] = shape;
  k["params"][0]["dtype"] = dtype;
  k["params"][1]["shape"] = shape;
  k["tensor_maps"] = json::array();
  k["tensor_maps"].push_back(
      {{"tensor", "input"}, {"box", box}, {"swizzle", 0}});
  return doc;
}
} // namespace

TEST(Manifest, ParsesTensorMaps) {
  Expected<Manifest> m = parseManifest(withTensorMaps().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &mm = m->kernels[0];
  ASSERT_EQ(mm.tensorMaps.size(), 2u);
  EXPECT_EQ(mm.tensorMaps[0].tensor, "a");
  EXPECT_EQ(mm.tensorMaps[0].box, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(mm.tensorMaps[0].swizzle, 128);
  EXPECT_EQ(mm.tensorMaps[1].tensor, "b");
  EXPECT_EQ(mm.tensorMaps[1].box, (std::vector<int64_t>{32, 256}));
  EXPECT_EQ(mm.tensorMaps[1].swizzle, 64);
  EXPECT_EQ(mm.params.size(), 3u);
  EXPECT_EQ(mm.numLaunchParams(), 5u);
  // Maps are not traffic of their own.
  EXPECT_EQ(mm.totalParamBytes(), 128 * 64 * 2 + 256 * 64 * 2 + 128 * 256 * 4);
  for (size_t i = 1; i < m->kernels.size(); ++i) {
    EXPECT_TRUE(m->kernels[i].tensorMaps.empty());
    EXPECT_EQ(m->kernels[i].numLaunchParams(), m->kernels[i].params.size());
  }
  // Launches still bind only the params.
  EXPECT_EQ(m->functions[0].launches[0].args.size(), 3u);

  // Absent and [] are the same: no maps.
  json empty = valid();
  empty["kernels"][0]["tensor_maps"] = json::array();
  Expected<Manifest> e = parseManifest(empty.dump(), "t.json");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_TRUE(e->kernels[0].tensorMaps.empty());
  Expected<Manifest> none = parseManifest(kValid, "t.json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->kernels[0].tensorMaps.empty());

  // Limits that are allowed: box 256, swizzle 0 with a 512-byte inner row,
  // swizzle 32 with exactly 32 bytes, a map of a split-K matmul.
  for (json doc :
       {withMapField(1, "box", {256, 256}), withMapField(0, "box", {16, 1})}) {
    doc["kernels"][0]["tensor_maps"][1]["swizzle"] = 0;
    Expected<Manifest> ok = parseManifest(doc.dump(), "t.json");
    EXPECT_TRUE(ok.ok()) << ok.error();
  }
  json doc = withMapField(0, "swizzle", 32);
  doc["kernels"][0]["tensor_maps"][0]["box"] = {16, 8};
  Expected<Manifest> ok = parseManifest(doc.dump(), "t.json");
  EXPECT_TRUE(ok.ok()) << ok.error();
  doc = withWorkspace();
  doc["kernels"][0]["tensor_maps"] =
      withTensorMaps()["kernels"][0]["tensor_maps"];
  ok = parseManifest(doc.dump(), "t.json");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->kernels[0].numLaunchParams(), 6u);
}

TEST(Manifest, TensorMapExampleParses) {
  // The example of docs/manifest.md (tensor_maps), kept in test/unit/Inputs.
  Expected<Manifest> m =
      loadManifest(std::string(KOPT_TEST_INPUTS) + "/tma-matmul.json");
  ASSERT_TRUE(m.ok()) << m.error();
  ASSERT_EQ(m->kernels.size(), 1u);
  ASSERT_EQ(m->kernels[0].tensorMaps.size(), 2u);
  EXPECT_EQ(m->kernels[0].tensorMaps[1].box, (std::vector<int64_t>{64, 256}));
}

TEST(Manifest, TensorMapGeometry) {
  Expected<Manifest> m = parseManifest(withTensorMaps().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &mm = m->kernels[0];
  Expected<TensorMapGeometry> a = tensorMapGeometry(mm, 0);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->paramIndex, 0u);
  EXPECT_EQ(a->dtype, DType::BF16);
  EXPECT_EQ(a->globalDim, (std::vector<uint64_t>{64, 128})); // shape reversed
  EXPECT_EQ(a->globalStrides, (std::vector<uint64_t>{128})); // 64 x 2 bytes
  EXPECT_EQ(a->box, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(a->swizzle, 128);
  Expected<TensorMapGeometry> b = tensorMapGeometry(mm, 1);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->paramIndex, 1u);
  EXPECT_EQ(b->globalDim, (std::vector<uint64_t>{64, 256}));
  EXPECT_EQ(b->swizzle, 64);
  Expected<TensorMapGeometry> none = tensorMapGeometry(mm, 2);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(),
            "kernel 'matmul_0' has 2 tensor maps, no tensor map 2");

  // Rank 3, f32, and rank 1 (no strides); by hand.
  KernelSpec k;
  k.name = "k";
  k.params = {{"x", Role::Input, DType::F32, {3, 5, 8}},
              {"y", Role::Input, DType::F16, {24}},
              {"result", Role::Output, DType::F32, {8}}};
  k.tensorMaps = {{"x", {4, 5, 1}, 0}, {"y", {8}, 32}};
  ASSERT_TRUE(validateTensorMaps(k, "k").ok());
  Expected<TensorMapGeometry> x = tensorMapGeometry(k, 0);
  ASSERT_TRUE(x.ok()) << x.error();
  EXPECT_EQ(x->dtype, DType::F32);
  EXPECT_EQ(x->globalDim, (std::vector<uint64_t>{8, 5, 3}));
  EXPECT_EQ(x->globalStrides, (std::vector<uint64_t>{32, 160}));
  EXPECT_EQ(x->box, (std::vector<uint32_t>{4, 5, 1}));
  Expected<TensorMapGeometry> y = tensorMapGeometry(k, 1);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->paramIndex, 1u);
  EXPECT_EQ(y->dtype, DType::F16);
  EXPECT_EQ(y->globalDim, (std::vector<uint64_t>{24}));
  EXPECT_TRUE(y->globalStrides.empty());
  // Hand-built shapes the parser would reject never overflow.
  KernelSpec huge = k;
  huge.params[0].shape = {2, int64_t(1) << 32, int64_t(1) << 32};
  Expected<TensorMapGeometry> h = tensorMapGeometry(huge, 0);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("the byte stride of dimension 0 overflows 64 bits"),
            std::string::npos)
      << h.error();
  huge.params[0].shape = {3, 0, 8};
  h = tensorMapGeometry(huge, 0);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("dimension 1 is 0, not positive"), std::string::npos)
      << h.error();
  // A bad map, named from the kernel.
  k.tensorMaps[1].swizzle = 16;
  Expected<TensorMapGeometry> bad = tensorMapGeometry(k, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "kernel 'k': tensor_maps[1].swizzle: 16 is not a "
                         "swizzle span (expected 0, 32, 64 or 128 bytes)");
}

TEST(ManifestErrors, TensorMapTypes) {
  const std::string at = "kernels[0] (matmul_0).tensor_maps";
  json doc = valid();
  doc["kernels"][0]["tensor_maps"] = json::object();
  expectError(doc, at + ": must be an array, got an object");
  doc = withTensorMaps();
  doc["kernels"][0]["tensor_maps"][1] = "b";
  expectError(doc, at + "[1]: must be an object, got a string");
  for (const char *field : {"tensor", "box", "swizzle"}) {
    doc = withTensorMaps();
    doc["kernels"][0]["tensor_maps"][1].erase(field);
    expectError(doc, at + "[1]." + field + ": missing field");
  }
  expectError(withMapField(0, "tensor", 0),
              at + "[0].tensor: must be a string, got an integer");
  doc = valid();
  doc["kernels"][0]["tensor_maps"] = nullptr;
  expectError(doc, at + ": must be an array, got null");
  expectError(withMapField(0, "box", 64),
              at + "[0].box: must be an array, got an integer");
  expectError(withMapField(0, "box", {"64", 128}),
              at + "[0].box[0]: must be an integer, got a string");
  expectError(withMapField(0, "box", {64, true}),
              at + "[0].box[1]: must be an integer, got a boolean");
  expectError(withMapField(0, "box", {64, nullptr}),
              at + "[0].box[1]: must be an integer, got null");
  expectError(withMapField(0, "box", {64, 1.5}),
              at + "[0].box[1]: must be an integer, got a number");
  expectError(withMapField(0, "swizzle", "128B"),
              at + "[0].swizzle: must be an integer, got a string");
}

TEST(ManifestErrors, TensorMapTensor) {
  const std::string at = "kernels[0] (matmul_0).tensor_maps";
  expectError(withMapField(1, "tensor", "c"),
              at + "[1].tensor: no parameter named 'c' (the kernel's "
                   "parameters are a, b, result)");
  // An output may have a map (a TMA store epilogue; which maps a kernel
  // takes is its schedule's part), a workspace not.
  json out = withMapField(0, "tensor", "result");
  out["kernels"][0]["tensor_maps"][0]["box"] = {32, 128}; // 128 bytes of f32
  Expected<Manifest> parsed = parseManifest(out.dump(), "t.json");
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  json doc = withWorkspace();
  doc["kernels"][0]["tensor_maps"] = json::array();
  doc["kernels"][0]["tensor_maps"].push_back(
      {{"tensor", "workspace"}, {"box", {4}}, {"swizzle", 0}});
  expectError(doc, at + "[0].tensor: parameter 'workspace' has role "
                        "'workspace'; a tensor map reads an input or writes "
                        "an output parameter");
  // Rank 1 to 5.
  const std::string gelu = "kernels[3] (gelu_3).tensor_maps[0].tensor: ";
  expectError(withGeluMap(json::array(), "f16", json::array()),
              gelu + "'input' (f16 []) has rank 0; a tensor map needs rank 1 "
                     "to 5");
  expectError(withGeluMap({1, 1, 1, 1, 1, 8}, "f16", {8, 1, 1, 1, 1, 1}),
              gelu + "'input' (f16 [1, 1, 1, 1, 1, 8]) has rank 6; a tensor "
                     "map needs rank 1 to 5");
  // Rank 5 passes the entry's rules; then gelu takes no maps at all.
  expectError(withGeluMap({1, 1, 1, 1, 8}, "f16", {8, 1, 1, 1, 1}),
              kGeluTakesNoMaps);
}

TEST(ManifestErrors, TensorMapBox) {
  const std::string at = "kernels[0] (matmul_0).tensor_maps";
  expectError(withMapField(0, "box", {64}),
              at + "[0].box: has 1 entries, but 'a' (bf16 [128, 64]) has rank "
                   "2 (one box size per dimension, innermost first)");
  expectError(withMapField(0, "box", {64, 128, 1}), at + "[0].box: has 3");
  // The spec's example message.
  json doc = withMapField(1, "box", {512, 256});
  doc["kernels"][0]["tensor_maps"][1]["swizzle"] = 0;
  expectError(doc, at + "[1].box[0]: 512 is out of range (1 to 256)");
  expectError(withMapField(0, "box", {64, 0}),
              at + "[0].box[1]: 0 is out of range (1 to 256)");
  expectError(withMapField(0, "box", {64, -3}),
              at + "[0].box[1]: -3 is out of range (1 to 256)");
  expectError(withMapField(0, "box", {64, 257}),
              at + "[0].box[1]: 257 is out of range (1 to 256)");
  // The inner row: a multiple of 16 bytes, within the swizzle span.
  doc = withMapField(0, "box", {4, 128});
  doc["kernels"][0]["tensor_maps"][0]["swizzle"] = 0;
  expectError(doc, at + "[0].box[0]: 4 x 2 bytes (bf16) = 8 bytes is not a "
                        "multiple of 16 bytes");
  expectError(withMapField(0, "box", {128, 128}),
              at + "[0].box[0]: 128 x 2 bytes (bf16) = 256 bytes exceed the "
                   "128-byte swizzle span");
  expectError(withMapField(1, "box", {64, 256}),
              at + "[1].box[0]: 64 x 2 bytes (bf16) = 128 bytes exceed the "
                   "64-byte swizzle span");
  doc = withMapField(0, "swizzle", 32);
  expectError(doc, at + "[0].box[0]: 64 x 2 bytes (bf16) = 128 bytes exceed "
                        "the 32-byte swizzle span");
  // f32: 4 bytes an element.
  expectError(withGeluMap({8}, "f32", {2}),
              "kernels[3] (gelu_3).tensor_maps[0].box[0]: 2 x 4 bytes (f32) = "
              "8 bytes is not a multiple of 16 bytes");
}

TEST(ManifestErrors, TensorMapSwizzle) {
  const std::string at = "kernels[0] (matmul_0).tensor_maps[0].swizzle: ";
  for (int64_t s :
       {int64_t(48), int64_t(16), int64_t(256), int64_t(-32), int64_t(1) << 40})
    expectError(withMapField(0, "swizzle", s),
                at + std::to_string(s) +
                    " is not a swizzle span (expected 0, 32, 64 or 128 "
                    "bytes)");
}

TEST(ManifestErrors, TensorMapStrides) {
  // a [128, 60] bf16: rows of 120 bytes, not a multiple of 16.
  json doc = withTensorMaps();
  doc["kernels"][0]["params"][0]["shape"] = {128, 60};
  doc["kernels"][0]["params"][1]["shape"] = {256, 60};
  doc["kernels"][0]["tensor_maps"][0]["box"] = {8, 128};
  expectError(doc, "kernels[0] (matmul_0).tensor_maps[0].tensor: 'a' (bf16 "
                   "[128, 60]): the byte stride of dimension 0 is 120, not a "
                   "multiple of 16");
  // Rank 3: dense row-major, so only the innermost stride can be off.
  expectError(withGeluMap({2, 3, 12}, "f16", {8, 1, 1}),
              "kernels[3] (gelu_3).tensor_maps[0].tensor: 'input' (f16 [2, 3, "
              "12]): the byte stride of dimension 1 is 24, not a multiple of "
              "16");
  // Strides that are fine: the entry passes, gelu takes no maps.
  for (const char *dtype : {"f16", "f32"})
    expectError(withGeluMap({2, 3, 8}, dtype, {8, 1, 1}), kGeluTakesNoMaps);
  // Below 2^40 bytes.
  expectError(withGeluMap({2, 1 << 20, 1 << 20}, "f32", {4, 1, 1}),
              "'input' (f32 [2, 1048576, 1048576]): the byte stride of "
              "dimension 0 is 4398046511104, not below 2^40");
  // And dimensions of at most 2^32 elements.
  expectError(withGeluMap({int64_t(1) << 33}, "f16", {8}),
              "'input' (f16 [8589934592]): dimension 0 is 8589934592, above "
              "the tensor-map limit of 2^32");
}

TEST(ManifestErrors, TensorMapsAreNotLaunchArgs) {
  json doc = withTensorMaps();
  doc["functions"][0]["launches"][0]["args"].push_back({{"arg", 0}});
  doc["functions"][0]["launches"][0]["args"].push_back({{"arg", 1}});
  expectError(doc, "launches[0].args: kernel 'matmul_0' takes 3 parameters, "
                   "the launch passes 5");
}

//===----------------------------------------------------------------------===//
// Tensor maps against the schedule (docs/manifest.md, schedule)
//===----------------------------------------------------------------------===//

namespace {
/// matmul_0 (a bf16 [128, 64], b bf16 [256, 64], transpose_b) built with
/// copy = tma and a 128 x 256 block tile, with the two maps the compiler
/// writes for it.
json withTma() {
  json doc = valid();
  json &k = doc["kernels"][0];
  k["schedule"] = json::parse(R"({
    "instruction": "wgmma", "copy": "tma", "block_m": 128, "block_n": 256,
    "block_k": 64, "warp_m": 64, "warp_n": 256, "num_warps": 8, "stages": 4,
    "split_k": 1, "swizzle": 8, "vector_width": 8, "persistent": false})");
  k["tensor_maps"] = json::parse(R"([
    {"tensor": "a", "box": [64, 128], "swizzle": 128},
    {"tensor": "b", "box": [64, 256], "swizzle": 128}])");
  k["block"] = {256, 1, 1}; // 32 x num_warps
  return doc;
}
/// withTma() with tensor_maps[index][field] = value.
json withTmaField(size_t index, const char *field, json value) {
  json doc = withTma();
  doc["kernels"][0]["tensor_maps"][index][field] = std::move(value);
  return doc;
}
/// withTma() with schedule[field] = value.
json withScheduleField(const char *field, json value) {
  json doc = withTma();
  doc["kernels"][0]["schedule"][field] = std::move(value);
  return doc;
}
void expectParses(const json &doc) {
  Expected<Manifest> m = parseManifest(doc.dump(), "t.json");
  EXPECT_TRUE(m.ok()) << m.error();
}
const std::string kMm = "kernels[0] (matmul_0)";
} // namespace

TEST(Manifest, TensorMapsFollowTheSchedule) {
  Expected<Manifest> m = parseManifest(withTma().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &mm = m->kernels[0];
  ASSERT_TRUE(mm.schedule.has_value());
  EXPECT_EQ(mm.schedule->copy, "tma");
  EXPECT_EQ(mm.schedule->blockM, 128);
  EXPECT_EQ(mm.schedule->blockN, 256);
  EXPECT_EQ(mm.numLaunchParams(), 5u);
  // Other kernels have no schedule (and none is read).
  EXPECT_FALSE(m->kernels[1].schedule.has_value());

  // Other copies: no maps (absent or []); block_m/block_n are not read.
  for (const char *copy : {"cp_async", "sync"}) {
    json doc = withScheduleField("copy", copy);
    doc["kernels"][0].erase("tensor_maps");
    doc["kernels"][0]["schedule"]["block_m"] = "informational";
    Expected<Manifest> other = parseManifest(doc.dump(), "t.json");
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_EQ(other->kernels[0].schedule->copy, copy);
    EXPECT_EQ(other->kernels[0].schedule->blockM, 0);
    doc["kernels"][0]["tensor_maps"] = json::array();
    expectParses(doc);
  }

  // One buffer for both operands: the compiler names 'b' (or 'a') for both
  // maps; allowed because both have the same last (K) dimension.
  for (const char *name : {"a", "b"}) {
    json doc = withTmaField(0, "tensor", name);
    doc["kernels"][0]["tensor_maps"][1]["tensor"] = name;
    expectParses(doc);
  }

  // f32 operands (TF32): 128-byte rows are 32 elements.
  json f32 = withTma();
  for (json *t :
       {&f32["kernels"][0]["params"][0], &f32["kernels"][0]["params"][1],
        &f32["functions"][0]["args"][0], &f32["functions"][0]["args"][1]})
    (*t)["dtype"] = "f32";
  f32["kernels"][0]["tensor_maps"][0]["box"] = {32, 128};
  f32["kernels"][0]["tensor_maps"][1]["box"] = {32, 256};
  expectParses(f32);

  // After a split-K workspace.
  json ws = withWorkspace();
  ws["kernels"][0]["schedule"] = withTma()["kernels"][0]["schedule"];
  ws["kernels"][0]["schedule"]["split_k"] = 2;
  ws["kernels"][0]["tensor_maps"] = withTma()["kernels"][0]["tensor_maps"];
  ws["kernels"][0]["block"] = {256, 1, 1}; // 32 x num_warps
  expectParses(ws);

  // A schedule on another kernel is not read; a matmul without one is held
  // to the entries' rules only (ParsesTensorMaps).
  json other = withTma();
  other["kernels"][1]["schedule"] = 5;
  expectParses(other);
}

TEST(ManifestErrors, TensorMapCountFollowsTheSchedule) {
  const std::string at = kMm + ".tensor_maps: ";
  const std::string tma =
      "schedule.copy is 'tma', which takes 2 tensor maps (of 'a', then 'b'), ";
  // Removed, truncated, one too many.
  json doc = withTma();
  doc["kernels"][0].erase("tensor_maps");
  expectError(doc, at + tma + "got 0");
  doc["kernels"][0]["tensor_maps"] = json::array();
  expectError(doc, at + tma + "got 0");
  doc = withTma();
  doc["kernels"][0]["tensor_maps"].erase(1);
  expectError(doc, at + tma + "got 1");
  doc = withTma();
  doc["kernels"][0]["tensor_maps"].push_back(
      doc["kernels"][0]["tensor_maps"][1]);
  expectError(doc, at + tma + "got 3");
  // Maps on a kernel whose copy is not tma.
  expectError(withScheduleField("copy", "cp_async"),
              at + "schedule.copy is 'cp_async', which takes no tensor maps, "
                   "got 2");
  // Maps on a kernel that is not a matmul.
  json gelu = valid();
  gelu["kernels"][3]["tensor_maps"] =
      json::parse(R"([{"tensor": "input", "box": [8], "swizzle": 0}])");
  expectError(gelu, kGeluTakesNoMaps);
}

TEST(ManifestErrors, TensorMapsMatchTheTile) {
  const std::string at = kMm + ".tensor_maps";
  // The spec's example: a box that is not the block tile's rows.
  expectError(withTmaField(0, "box", {64, 64}),
              at + "[0].box[1]: 64, but schedule.block_m is 128");
  expectError(withTmaField(1, "box", {64, 128}),
              at + "[1].box[1]: 128, but schedule.block_n is 256");
  expectError(withScheduleField("block_n", 128),
              at + "[1].box[1]: 256, but schedule.block_n is 128");
  // Swapped maps: map 0 then holds block_n rows.
  json doc = withTma();
  std::swap(doc["kernels"][0]["tensor_maps"][0],
            doc["kernels"][0]["tensor_maps"][1]);
  expectError(doc, at + "[0].box[1]: 256, but schedule.block_m is 128");
  // Rows of 128 bytes, swizzle 128.
  expectError(withTmaField(0, "box", {32, 128}),
              at + "[0].box[0]: 32, but copy = tma reads rows of 128 bytes: "
                   "128 / sizeof(bf16) is 64");
  expectError(withTmaField(1, "swizzle", 0),
              at + "[1].swizzle: 0, but copy = tma maps use swizzle 128");
  // The entry's own rules come first.
  expectError(withTmaField(1, "box", {64, 512}),
              at + "[1].box[1]: 512 is out of range (1 to 256)");
  json result = withTmaField(1, "tensor", "result");
  result["kernels"][0]["tensor_maps"][1]["box"] = {32, 256}; // 128 B of f32
  expectError(result, at + "[1].tensor: 'result' is not an input parameter "
                           "of the kernel");
}

namespace {
/// withTma() with tma_store: a third map, of the f32 [128, 256] result:
/// block_n 256 f32 = 1024 bytes, so 128-byte rows (32 f32) x block_m rows,
/// swizzle 128.
json withTmaStore() {
  json doc = withTma();
  json &k = doc["kernels"][0];
  k["schedule"]["tma_store"] = true;
  k["tensor_maps"].push_back(
      {{"tensor", "result"}, {"box", {32, 128}}, {"swizzle", 128}});
  return doc;
}
} // namespace

TEST(Manifest, TmaStoreMap) {
  Expected<Manifest> m = parseManifest(withTmaStore().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  const KernelSpec &mm = m->kernels[0];
  ASSERT_TRUE(mm.schedule.has_value());
  EXPECT_TRUE(mm.schedule->tmaStore);
  EXPECT_EQ(mm.numLaunchParams(), 6u);
  Expected<TensorMapGeometry> g = tensorMapGeometry(mm, 2);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->paramIndex, 2u); // the result
  EXPECT_EQ(g->swizzle, 128);
  // Narrower tiles store narrower boxes: block_n 16 f32 = 64 bytes, 8 = 32.
  for (auto [blockN, columns] : {std::pair{16, 16}, std::pair{8, 8}}) {
    json narrow = withTmaStore();
    narrow["kernels"][0]["schedule"]["block_n"] = blockN;
    narrow["kernels"][0]["tensor_maps"][1]["box"] = {64, blockN};
    narrow["kernels"][0]["tensor_maps"][2]["box"] = {columns, 128};
    narrow["kernels"][0]["tensor_maps"][2]["swizzle"] = columns * 4;
    expectParses(narrow);
  }
  // tma_store without TMA loads: the output's map only.
  json cp = withTmaStore();
  cp["kernels"][0]["schedule"]["copy"] = "cp_async";
  cp["kernels"][0]["tensor_maps"].erase(0);
  cp["kernels"][0]["tensor_maps"].erase(0);
  expectParses(cp);
  // Without tma_store (absent or false) the third map is one too many.
  json off = withTmaStore();
  off["kernels"][0]["schedule"]["tma_store"] = false;
  expectError(off, kMm + ".tensor_maps: schedule.copy is 'tma', which takes 2 "
                         "tensor maps (of 'a', then 'b'), got 3");
}

TEST(ManifestErrors, TmaStoreMap) {
  const std::string at = kMm + ".tensor_maps";
  auto withStoreField = [](const char *field, json value) {
    json doc = withTmaStore();
    doc["kernels"][0]["tensor_maps"][2][field] = std::move(value);
    return doc;
  };
  json doc = withTmaStore();
  doc["kernels"][0]["tensor_maps"].erase(2);
  expectError(doc, at + ": schedule.copy is 'tma' and schedule.tma_store is "
                        "true, which take 3 tensor maps (of 'a', 'b', then "
                        "the output), got 2");
  json cp = withTmaStore();
  cp["kernels"][0]["schedule"]["copy"] = "cp_async";
  expectError(cp, at + ": schedule.copy is 'cp_async' and "
                       "schedule.tma_store is true, which take 1 tensor map "
                       "(of the output), got 3");
  expectError(withStoreField("tensor", "a"),
              at + "[2].tensor: 'a' is not an output parameter of the kernel "
                   "(with tma_store the last map writes the output)");
  expectError(withStoreField("box", {8, 128}),
              at + "[2].box[0]: 8, but with schedule.block_n x sizeof(f32) = "
                   "256 x 4 = 1024 bytes tma_store writes rows of 128 bytes: "
                   "32 elements");
  json odd = withTmaStore();
  odd["kernels"][0]["schedule"]["block_n"] = 4; // 16 bytes of f32
  odd["kernels"][0]["tensor_maps"][1]["box"] = {64, 4};
  expectError(odd, at + "[2]: schedule.block_n x sizeof(f32) = 4 x 4 = 16 "
                        "bytes is not a multiple of 32 (tma_store stores "
                        "boxes of 32 to 128 bytes of columns)");
  expectError(withStoreField("box", {32, 64}),
              at + "[2].box[1]: 64, but schedule.block_m is 128 and M 128: "
                   "the boxes have min(block_m, M rounded up to 8) = 128 "
                   "rows");
  expectError(withStoreField("box", {32, 128, 1}),
              at + "[2].box: has 3 entries, but 'result' (f32 [128, 256]) "
                   "has rank 2");
  expectError(withStoreField("swizzle", 0),
              at + "[2].swizzle: 0, but the tma_store map's rows of 128 bytes "
                   "use swizzle 128");
  json notBool = withTmaStore();
  notBool["kernels"][0]["schedule"]["tma_store"] = "yes";
  expectError(notBool,
              kMm + ".schedule.tma_store: must be a boolean, got a string");
  // block_m is required with tma_store even without TMA loads.
  json noRows = cp;
  noRows["kernels"][0]["tensor_maps"].erase(0);
  noRows["kernels"][0]["tensor_maps"].erase(0);
  noRows["kernels"][0]["schedule"].erase("block_m");
  expectError(noRows, kMm + ".schedule.block_m: missing field");
}

TEST(ManifestErrors, TensorMapTensorFollowsTheOperand) {
  // b stored [K, N] = [64, 256]: its last dimension is N, not K, so a map of
  // A may not read it.
  json doc = withTma();
  json &k = doc["kernels"][0];
  k["ops"][0]["attrs"]["transpose_b"] = false;
  k["params"][1]["shape"] = {64, 256};
  doc["functions"][0]["args"][1]["shape"] = {64, 256};
  // (Its 64 rows are fewer than block_n: boxes of 64 rows.)
  k["tensor_maps"][1]["box"][1] = 64;
  expectParses(doc);
  k["tensor_maps"][0]["tensor"] = "b";
  expectError(doc, kMm + ".tensor_maps[0].tensor: 'b' [64, 256], but map 0 "
                         "of a copy = tma kernel reads 'a' [128, 64] (another "
                         "input only with the same last, K, dimension)");
  k["tensor_maps"][0]["tensor"] = "a";
  k["tensor_maps"][1]["tensor"] = "a";
  expectError(doc, kMm + ".tensor_maps[1].tensor: 'a' [128, 64], but map 1 "
                         "of a copy = tma kernel reads 'b' [64, 256]");
}

TEST(ManifestErrors, ScheduleTypes) {
  const std::string at = kMm + ".schedule";
  json doc = withTma();
  doc["kernels"][0]["schedule"] = json::array();
  expectError(doc, at + ": must be an object, got an array");
  doc["kernels"][0]["schedule"] = nullptr;
  expectError(doc, at + ": must be an object, got null");
  doc = withTma();
  doc["kernels"][0]["schedule"].erase("copy");
  expectError(doc, at + ".copy: missing field");
  expectError(withScheduleField("copy", 3),
              at + ".copy: must be a string, got an integer");
  doc = withTma();
  doc["kernels"][0]["schedule"].erase("block_m");
  expectError(doc, at + ".block_m: missing field");
  expectError(withScheduleField("block_n", "256"),
              at + ".block_n: must be an integer, got a string");
  expectError(withScheduleField("block_m", 128.0),
              at + ".block_m: must be an integer, got a number");
}

TEST(ManifestErrors, BlockFollowsNumWarps) {
  // A warp-specialized 128 x 256 tile has 9 warps: a block of 256 threads
  // would leave out the producer warp.
  json doc = withTma();
  doc["kernels"][0]["schedule"]["num_warps"] = 9;
  doc["kernels"][0]["schedule"]["warp_specialize"] = true;
  expectError(doc, kMm + ".block: 256 threads, but schedule.num_warps is 9 "
                         "(288 threads)");
  doc["kernels"][0]["block"] = {288, 1, 1};
  expectParses(doc);
  doc["kernels"][0]["schedule"]["warp_specialize"] = "yes";
  expectError(doc, kMm + ".schedule.warp_specialize: must be a boolean, got a "
                         "string");
  expectError(withScheduleField("num_warps", 0),
              kMm + ".schedule.num_warps: value 0 out of range [1, 32]");
  // Without num_warps the block is not checked against the schedule.
  json noWarps = withTma();
  noWarps["kernels"][0]["schedule"].erase("num_warps");
  noWarps["kernels"][0]["block"] = {128, 1, 1};
  expectParses(noWarps);
}

TEST(Manifest, ValidateTensorMapScheduleByHand) {
  Expected<Manifest> m = parseManifest(withTma().dump(), "t.json");
  ASSERT_TRUE(m.ok()) << m.error();
  KernelSpec k = m->kernels[0];
  EXPECT_TRUE(validateTensorMapSchedule(k, "k").ok());
  k.schedule->blockM = 64;
  Status s = validateTensorMapSchedule(k, "k");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "k.tensor_maps[0].box[1]: 128, but schedule.block_m "
                         "is 64");
  k.schedule.reset(); // no schedule: the entries' rules only
  EXPECT_TRUE(validateTensorMapSchedule(k, "k").ok());
  // An operand with fewer rows than its block tile (decode): boxes of its
  // rows rounded up to 8 (kopt::schedule::tmaBoxRows).
  KernelSpec small = m->kernels[0];
  for (TensorSpec &p : small.params)
    if (p.name == "a")
      p.shape = {13, 64};
  s = validateTensorMapSchedule(small, "k");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "k.tensor_maps[0].box[1]: 128, but 'a' [13, 64] has "
                         "fewer rows than schedule.block_m (128): its boxes "
                         "have its rows rounded up to 8, 16");
  small.tensorMaps[0].box[1] = 16;
  EXPECT_TRUE(validateTensorMapSchedule(small, "k").ok());
}
