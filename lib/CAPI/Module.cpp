//===- Module.cpp - Loading and launching compiled kopt modules -----------===//
//
// The C API's runtime half: no MLIR. A kopt_module owns a CudaContext (the
// device's primary context, retained), the parsed manifest and the loaded
// PTX; launches go through CudaContext::launchFunction, the one launcher
// every kopt tool uses.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Runtime.h"
#include "kopt/Runtime/Workspace.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

using kopt::capi::guard;
using kopt::capi::makeError;
using namespace kopt::rt;

struct kopt_module {
  std::mutex mutex;
  std::unique_ptr<CudaContext> context;
  Manifest manifest;
  std::string manifestText;
  /// The module cache key of the PTX in `context`.
  std::string key;
};

namespace {

std::atomic<uint64_t> moduleCounter{0};

kopt_error *fromStatus(const Status &status) {
  return status.ok() ? nullptr : makeError(status.message());
}

/// Pushes the module's context for the scope of a call.
class CurrentContext {
public:
  explicit CurrentContext(CudaContext &ctx) : ctx(ctx) {
    status = ctx.pushCurrent();
  }
  ~CurrentContext() {
    if (status.ok())
      ctx.popCurrent();
  }
  const Status &result() const { return status; }

private:
  CudaContext &ctx;
  Status status = Status::success();
};

kopt_error *load(std::string ptx, std::string manifestText,
                 const std::string &sourceName, const std::string &baseDir,
                 int device, kopt_module **result) {
  if (!result)
    return makeError("kopt_module_load: result is null");
  Expected<Manifest> manifest =
      parseManifest(manifestText, sourceName, baseDir);
  if (!manifest.ok())
    return fromStatus(manifest.status());
  Expected<std::unique_ptr<CudaContext>> context = CudaContext::create(device);
  if (!context.ok())
    return fromStatus(context.status());
  auto module = std::make_unique<kopt_module>();
  module->context = context.take();
  module->manifest = manifest.take();
  module->manifestText = std::move(manifestText);
  // The PTX is loaded from memory: its cache key stands for the path.
  module->key = "<kopt module " + std::to_string(++moduleCounter) + ": " +
                (module->manifest.ptxPath.empty() ? sourceName
                                                  : module->manifest.ptxPath) +
                ">";
  module->manifest.ptxPath = module->key;
  CurrentContext current(*module->context);
  if (kopt_error *e = fromStatus(current.result()))
    return e;
  if (kopt_error *e =
          fromStatus(module->context->loadModuleData(module->key, ptx)))
    return e;
  // Resolve every kernel now, so that a PTX that lacks one of the
  // manifest's kernels (or disagrees on its parameters) fails at load.
  for (const KernelSpec &kernel : module->manifest.kernels) {
    Expected<Function> fn = module->context->getFunction(module->key, kernel);
    if (!fn.ok())
      return fromStatus(fn.status());
  }
  *result = module.release();
  return nullptr;
}

const FunctionSpec *findFunction(const Manifest &manifest, const char *name) {
  if (!name)
    return nullptr;
  for (const FunctionSpec &f : manifest.functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

kopt_error *noFunction(const kopt_module *module, const char *name) {
  std::string names;
  for (const FunctionSpec &f : module->manifest.functions)
    names += (names.empty() ? "" : ", ") + f.name;
  return makeError(
      std::string("no function named '") + (name ? name : "(null)") +
      "' in the module (it has: " + (names.empty() ? "none" : names) + ")");
}

} // namespace

extern "C" {

kopt_error *kopt_module_load(const char *ptx, size_t ptx_length,
                             const char *manifest_json, size_t manifest_length,
                             int device, kopt_module **result) {
  return guard("kopt_module_load", [&]() -> kopt_error * {
    if (!ptx || !manifest_json)
      return makeError("kopt_module_load: ptx and manifest_json must not be "
                       "null");
    return load(std::string(ptx, ptx_length),
                std::string(manifest_json, manifest_length), "<manifest>", "",
                device, result);
  });
}

kopt_error *kopt_manifest_validate(const char *manifest_json, size_t length,
                                   const char *source_name) {
  return guard("kopt_manifest_validate", [&]() -> kopt_error * {
    if (!manifest_json)
      return makeError("kopt_manifest_validate: manifest_json is null");
    Expected<Manifest> manifest = parseManifest(
        std::string_view(manifest_json, length),
        source_name && *source_name ? source_name : "<manifest>", "");
    return manifest.ok() ? nullptr : fromStatus(manifest.status());
  });
}

kopt_error *kopt_module_load_file(const char *manifest_path, int device,
                                  kopt_module **result) {
  return guard("kopt_module_load_file", [&]() -> kopt_error * {
    if (!manifest_path || !*manifest_path)
      return makeError("kopt_module_load_file: manifest_path is empty");
    auto read = [](const std::string &path, std::string &out) {
      std::ifstream in(path, std::ios::binary);
      if (!in)
        return false;
      std::ostringstream text;
      text << in.rdbuf();
      out = text.str();
      return true;
    };
    std::string manifestText;
    if (!read(manifest_path, manifestText))
      return makeError(std::string("cannot read manifest '") + manifest_path +
                       "': " + std::strerror(errno));
    // The manifest's `ptx` is relative to its folder: parse once for it.
    std::string path = manifest_path;
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
    Expected<Manifest> manifest = parseManifest(manifestText, path, dir);
    if (!manifest.ok())
      return fromStatus(manifest.status());
    std::string ptx;
    if (!read(manifest->ptxPath, ptx))
      return makeError("cannot read PTX file '" + manifest->ptxPath +
                       "' (named by " + path + "): " + std::strerror(errno));
    return load(std::move(ptx), std::move(manifestText), path, dir, device,
                result);
  });
}

void kopt_module_free(kopt_module *module) {
  if (!module)
    return;
  try {
    {
      std::lock_guard<std::mutex> lock(module->mutex);
      CurrentContext current(*module->context);
      if (current.result().ok())
        (void)module->context->unloadModule(module->key);
    }
    delete module;
  } catch (...) {
    // Nothing may escape; the module is leaked rather than half-freed.
  }
}

size_t kopt_module_num_functions(const kopt_module *module) {
  return module ? module->manifest.functions.size() : 0;
}

const char *kopt_module_function_name(const kopt_module *module, size_t index) {
  if (!module || index >= module->manifest.functions.size())
    return nullptr;
  return module->manifest.functions[index].name.c_str();
}

const char *kopt_module_manifest(const kopt_module *module) {
  return module ? module->manifestText.c_str() : nullptr;
}

kopt_error *kopt_function_num_args(const kopt_module *module,
                                   const char *function, size_t *num_args) {
  return guard("kopt_function_num_args", [&]() -> kopt_error * {
    if (!module || !num_args)
      return makeError("kopt_function_num_args: module and num_args must not "
                       "be null");
    const FunctionSpec *f = findFunction(module->manifest, function);
    if (!f)
      return noFunction(module, function);
    *num_args = f->args.size();
    return nullptr;
  });
}

kopt_error *kopt_function_arg(const kopt_module *module, const char *function,
                              size_t index, kopt_arg_info *info) {
  return guard("kopt_function_arg", [&]() -> kopt_error * {
    if (!module || !info)
      return makeError("kopt_function_arg: module and info must not be null");
    const FunctionSpec *f = findFunction(module->manifest, function);
    if (!f)
      return noFunction(module, function);
    if (index >= f->args.size())
      return makeError("function '" + f->name + "' has " +
                       std::to_string(f->args.size()) + " arguments; index " +
                       std::to_string(index) + " is out of range");
    const TensorSpec &arg = f->args[index];
    info->name = arg.name.c_str();
    info->role = arg.role == Role::Output ? KOPT_ROLE_OUTPUT : KOPT_ROLE_INPUT;
    info->dtype = arg.dtype == DType::F16    ? KOPT_DTYPE_F16
                  : arg.dtype == DType::BF16 ? KOPT_DTYPE_BF16
                                             : KOPT_DTYPE_F32;
    info->rank = arg.shape.size();
    info->shape = arg.shape.data();
    info->bytes = static_cast<uint64_t>(arg.numBytes());
    return nullptr;
  });
}

kopt_error *kopt_module_kernel_resources(kopt_module *module,
                                         const char *kernel,
                                         kopt_kernel_resources *resources) {
  return guard("kopt_module_kernel_resources", [&]() -> kopt_error * {
    if (!module || !resources)
      return makeError("kopt_module_kernel_resources: module and resources "
                       "must not be null");
    const KernelSpec *spec =
        kernel ? module->manifest.findKernel(kernel) : nullptr;
    if (!spec)
      return makeError(std::string("no kernel named '") +
                       (kernel ? kernel : "(null)") + "' in the module");
    std::lock_guard<std::mutex> lock(module->mutex);
    CurrentContext current(*module->context);
    if (kopt_error *e = fromStatus(current.result()))
      return e;
    Expected<Function> fn = module->context->getFunction(module->key, *spec);
    if (!fn.ok())
      return fromStatus(fn.status());
    Expected<FunctionResources> r = module->context->getResources(*fn);
    if (!r.ok())
      return fromStatus(r.status());
    resources->registers = r->registers;
    resources->local_bytes = r->localBytes;
    resources->static_shared_bytes = r->staticSharedBytes;
    resources->max_threads_per_block = r->maxThreadsPerBlock;
    return nullptr;
  });
}

kopt_error *kopt_function_workspace_bytes(const kopt_module *module,
                                          const char *function,
                                          uint64_t *bytes) {
  return guard("kopt_function_workspace_bytes", [&]() -> kopt_error * {
    if (!module || !bytes)
      return makeError("kopt_function_workspace_bytes: module and bytes must "
                       "not be null");
    const FunctionSpec *f = findFunction(module->manifest, function);
    if (!f)
      return noFunction(module, function);
    Expected<WorkspaceLayout> layout = workspaceLayout(*f);
    if (!layout.ok())
      return fromStatus(layout.status());
    *bytes = static_cast<uint64_t>(layout->bytes);
    return nullptr;
  });
}

kopt_error *kopt_function_launch(kopt_module *module, const char *function,
                                 const uint64_t *args, size_t num_args,
                                 uint64_t workspace, uint64_t workspace_bytes,
                                 void *stream, uint32_t flags) {
  return guard("kopt_function_launch", [&]() -> kopt_error * {
    if (!module)
      return makeError("kopt_function_launch: module is null");
    if (!args && num_args)
      return makeError("kopt_function_launch: args is null");
    if (flags & ~uint32_t(KOPT_LAUNCH_WORKSPACE_ZEROED))
      return makeError("kopt_function_launch: unknown flags " +
                       std::to_string(flags));
    if (workspace_bytes > uint64_t(INT64_MAX))
      return makeError("kopt_function_launch: workspace_bytes is too large");
    const FunctionSpec *f = findFunction(module->manifest, function);
    if (!f)
      return noFunction(module, function);
    std::vector<DevicePtr> pointers(args, args + num_args);
    std::lock_guard<std::mutex> lock(module->mutex);
    CurrentContext current(*module->context);
    if (kopt_error *e = fromStatus(current.result()))
      return e;
    return fromStatus(module->context->launchFunction(
        module->manifest, *f, pointers, workspace,
        static_cast<int64_t>(workspace_bytes), static_cast<Stream>(stream),
        (flags & KOPT_LAUNCH_WORKSPACE_ZEROED) != 0));
  });
}

} // extern "C"
