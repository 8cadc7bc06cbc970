//===- Writer.cpp - Write the launch manifest as JSON ---------------------===//
//
// The structs of include/kopt/Manifest/Manifest.h as the JSON of
// docs/manifest.md, fields in the documented order. The compiler writes every
// manifest through writeManifest after validateManifest accepted it.
//
//===----------------------------------------------------------------------===//

#include "kopt/Manifest/Manifest.h"

#include <nlohmann/json.hpp>

using ojson = nlohmann::ordered_json;

namespace kopt::manifest {

namespace {

ojson tensorJson(const TensorSpec &t, bool withRole) {
  ojson j;
  j["name"] = t.name;
  if (withRole)
    j["role"] = roleName(t.role);
  j["dtype"] = dtypeName(t.dtype);
  j["shape"] = t.shape;
  return j;
}

ojson attrsJson(const OpSpec &op) {
  ojson j = ojson::object();
  const OpAttrs &a = op.attrs;
  switch (op.kind) {
  case OpKind::Matmul:
    j["transpose_a"] = a.transposeA;
    j["transpose_b"] = a.transposeB;
    if (a.tf32)
      j["tf32"] = true;
    break;
  case OpKind::Pack:
    j["transpose"] = a.transpose;
    break;
  case OpKind::Gelu:
    j["approximate"] = geluApproximationName(a.approximate);
    break;
  case OpKind::Reduce:
    j["kind"] = reduceKindName(a.reduceKind);
    break;
  case OpKind::RmsNorm:
  case OpKind::LayerNorm:
    j["eps"] = a.eps;
    break;
  default:
    break;
  }
  return j;
}

ojson opJson(const OpSpec &op) {
  ojson j;
  j["op"] = opName(op.kind);
  j["attrs"] = attrsJson(op);
  ojson operands = ojson::object();
  for (const OpOperand &o : op.operands)
    operands[o.name] = o.value;
  j["operands"] = operands;
  j["result"] = op.result;
  return j;
}

ojson opsJson(const KernelSpec &k) {
  ojson ops = ojson::array();
  for (const OpSpec &op : k.ops)
    ops.push_back(opJson(op));
  return ops;
}

ojson kernelJson(const KernelSpec &k) {
  ojson j;
  j["name"] = k.name;
  j["class"] = kernelClassName(k.cls);
  j["ops"] = opsJson(k);
  if (!k.values.empty()) {
    ojson values = ojson::array();
    for (const TensorSpec &v : k.values)
      values.push_back(tensorJson(v, /*withRole=*/false));
    j["values"] = values;
  }
  ojson params = ojson::array();
  for (const TensorSpec &p : k.params)
    params.push_back(tensorJson(p, /*withRole=*/true));
  j["params"] = params;
  if (!k.tensorMaps.empty()) {
    ojson maps = ojson::array();
    for (const TensorMapSpec &m : k.tensorMaps)
      maps.push_back(
          {{"tensor", m.tensor}, {"box", m.box}, {"swizzle", m.swizzle}});
    j["tensor_maps"] = maps;
  }
  j["grid"] = k.grid;
  j["block"] = k.block;
  if (k.cluster != std::array<uint32_t, 3>{1, 1, 1})
    j["cluster"] = k.cluster;
  j["dynamic_shared_bytes"] = k.dynamicSharedBytes;
  if (k.schedule) {
    ojson s = ojson::parse(k.schedule->json, nullptr,
                           /*allow_exceptions=*/false);
    if (s.is_discarded() || !s.is_object()) {
      // Only the fields the validator reads.
      s = ojson::object();
      s["copy"] = k.schedule->copy;
      if (k.schedule->numWarps)
        s["num_warps"] = k.schedule->numWarps;
      if (k.schedule->tmaStore)
        s["tma_store"] = true;
      if (k.schedule->copy == "tma" || k.schedule->tmaStore) {
        s["block_m"] = k.schedule->blockM;
        s["block_n"] = k.schedule->blockN;
      }
    }
    j["schedule"] = s;
  }
  return j;
}

ojson functionJson(const FunctionSpec &f) {
  ojson j;
  j["name"] = f.name;
  ojson args = ojson::array();
  for (const TensorSpec &a : f.args)
    args.push_back(tensorJson(a, /*withRole=*/true));
  j["args"] = args;
  ojson buffers = ojson::array();
  for (const BufferSpec &b : f.buffers) {
    ojson bj;
    bj["id"] = b.id;
    bj["dtype"] = dtypeName(b.dtype);
    bj["shape"] = b.shape;
    if (b.workspace)
      bj["role"] = "workspace";
    buffers.push_back(bj);
  }
  j["buffers"] = buffers;
  ojson launches = ojson::array();
  for (const LaunchSpec &l : f.launches) {
    ojson largs = ojson::array();
    for (const LaunchArg &a : l.args)
      largs.push_back(
          {{a.kind == LaunchArg::Kind::Arg ? "arg" : "buffer", a.index}});
    launches.push_back({{"kernel", l.kernel}, {"args", largs}});
  }
  j["launches"] = launches;
  return j;
}

/// Never throws: a string that is not UTF-8 is written with U+FFFD.
std::string dump(const ojson &j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false,
                ojson::error_handler_t::replace);
}

} // namespace

std::string writeManifest(const Manifest &m) {
  ojson j;
  j["kopt_manifest_version"] = m.version;
  j["chip"] = m.chip;
  j["ptx"] = m.ptx;
  ojson kernels = ojson::array();
  for (const KernelSpec &k : m.kernels)
    kernels.push_back(kernelJson(k));
  j["kernels"] = kernels;
  ojson functions = ojson::array();
  for (const FunctionSpec &f : m.functions)
    functions.push_back(functionJson(f));
  j["functions"] = functions;
  return dump(j, 2) + "\n";
}

std::string writeOpAttrs(const OpSpec &op) { return dump(attrsJson(op), -1); }

std::string writeOps(const KernelSpec &kernel) {
  return dump(opsJson(kernel), -1);
}

} // namespace kopt::manifest
