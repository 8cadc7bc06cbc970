//===- Targets.cpp - Kernels and functions of a manifest as Targets -------===//
//
// Measurer::measureKernel and measureFunction (include/kopt/Measure/
// Measure.h): each builds a Target whose bind packs the arguments of one
// buffer set once, with tensor maps of its own (so a run never re-encodes a
// map), and whose enqueue only launches.
//
//===----------------------------------------------------------------------===//

#include "kopt/Measure/Measure.h"

#include <memory>
#include <optional>

namespace kopt::measure {

using rt::ArgPack;
using rt::DeviceBuffer;
using rt::DevicePtr;
using rt::TensorMaps;

namespace {

/// One kernel launch, packed for one buffer set.
struct PackedLaunch {
  const rt::KernelSpec *kernel = nullptr;
  rt::Function function = nullptr;
  /// Heap-held so that abandon() can give its device buffers up.
  std::unique_ptr<TensorMaps> maps;
  std::optional<ArgPack> pack;
};

/// The launches of every set, and the function workspaces.
struct Packs {
  std::vector<std::vector<PackedLaunch>> sets;
  std::vector<DeviceBuffer> workspaces;

  /// Gives the device memory up without freeing it (after a timeout).
  void abandon() {
    for (std::vector<PackedLaunch> &set : sets)
      for (PackedLaunch &launch : set)
        (void)launch.maps.release();
    for (DeviceBuffer &w : workspaces)
      (void)w.release();
  }
};

Expected<PackedLaunch> pack(rt::CudaContext &ctx, const rt::Manifest &manifest,
                            const rt::KernelSpec &kernel,
                            const std::vector<DevicePtr> &pointers,
                            rt::Stream stream) {
  PackedLaunch launch;
  launch.kernel = &kernel;
  Expected<rt::Function> fn = ctx.getFunction(manifest.ptxPath, kernel);
  if (!fn.ok())
    return fn.status();
  launch.function = *fn;
  launch.maps = std::make_unique<TensorMaps>();
  Expected<ArgPack> args = ctx.packArgs(kernel, pointers, *launch.maps, stream);
  if (!args.ok())
    return args.status();
  launch.pack.emplace(args.take());
  return std::move(launch);
}

Status launchAll(rt::CudaContext &ctx, std::vector<PackedLaunch> &set,
                 rt::Stream stream) {
  for (PackedLaunch &launch : set)
    KOPT_RETURN_IF_ERROR(ctx.launch(launch.function, *launch.kernel,
                                    launch.pack->data(), stream));
  return Status::success();
}

} // namespace

Expected<Measurement>
Measurer::measureKernel(const rt::Manifest &manifest,
                        const rt::KernelSpec &kernel,
                        const std::vector<DevicePtr> &params,
                        const Options &options, const AuditFn &audit) {
  auto packs = std::make_shared<Packs>();
  Target target;
  target.name = "kernel '" + kernel.name + "'";
  target.tensors = kernel.params;
  rt::CudaContext &c = ctx;
  target.bind = [&c, &manifest, &kernel,
                 packs](size_t set, const std::vector<DevicePtr> &pointers,
                        rt::Stream s) -> Status {
    if (set != packs->sets.size())
      return Status::error("buffer sets bound out of order");
    Expected<PackedLaunch> launch = pack(c, manifest, kernel, pointers, s);
    if (!launch.ok())
      return launch.status();
    packs->sets.emplace_back();
    packs->sets.back().push_back(launch.take());
    return Status::success();
  };
  target.enqueue = [&c, packs](size_t set, rt::Stream s) {
    return launchAll(c, packs->sets[set], s);
  };
  target.abandon = [packs] { packs->abandon(); };
  Expected<Measurement> m = measure(target, params, options, audit);
  if (lost)
    packs->abandon(); // whatever bind made before a failure, too
  return m;
}

Expected<Measurement>
Measurer::measureFunction(const rt::Manifest &manifest,
                          const rt::FunctionSpec &function,
                          const std::vector<DevicePtr> &args,
                          const Options &options, const AuditFn &audit) {
  Expected<rt::WorkspaceLayout> layout = rt::workspaceLayout(function);
  if (!layout.ok())
    return layout.status();
  int64_t workspaceBytes = layout->bytes;
  auto packs = std::make_shared<Packs>();
  Target target;
  target.name = "function '" + function.name + "'";
  target.tensors = function.args;
  rt::CudaContext &c = ctx;
  target.bind = [&c, &manifest, &function, packs, workspaceBytes](
                    size_t set, const std::vector<DevicePtr> &pointers,
                    rt::Stream s) -> Status {
    if (set != packs->sets.size())
      return Status::error("buffer sets bound out of order");
    // A workspace per set, zeroed once: its split-K buffers must start at
    // zero, and their kernels leave them zero.
    DevicePtr workspace = 0;
    if (workspaceBytes > 0) {
      Expected<DeviceBuffer> w = c.allocate(workspaceBytes);
      if (!w.ok())
        return w.status().withContext("workspace");
      workspace = w->get();
      packs->workspaces.push_back(w.take());
      KOPT_RETURN_IF_ERROR(c.memsetAsync(workspace, 0, workspaceBytes, s));
    }
    Expected<std::vector<rt::ResolvedLaunch>> plan = rt::resolveLaunches(
        manifest, function, pointers, workspace, workspaceBytes);
    if (!plan.ok())
      return plan.status();
    KOPT_RETURN_IF_ERROR(c.checkStream(s));
    packs->sets.emplace_back();
    for (const rt::ResolvedLaunch &r : *plan) {
      Expected<PackedLaunch> launch =
          pack(c, manifest, *r.kernel, r.pointers, s);
      if (!launch.ok())
        return launch.status();
      packs->sets.back().push_back(launch.take());
    }
    return Status::success();
  };
  target.enqueue = [&c, packs](size_t set, rt::Stream s) {
    return launchAll(c, packs->sets[set], s);
  };
  target.abandon = [packs] { packs->abandon(); };
  Expected<Measurement> m = measure(target, args, options, audit);
  if (lost)
    packs->abandon();
  return m;
}

} // namespace kopt::measure
