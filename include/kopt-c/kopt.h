/*===- kopt.h - The kopt C API ---------------------------------*- C -*-===//
 *
 * A C interface to kopt for frameworks and language bindings (the Python
 * package python/kopt uses it through ctypes): compile MLIR text of kopt ops to
 * PTX + launch manifest, load the result on a GPU, and launch its functions on
 * caller-provided device memory on the caller's stream.
 *
 * Versioning: KOPT_C_API_VERSION is bumped whenever a declaration here changes
 * incompatibly; kopt_c_api_version() gives the version the library was built
 * with, so a binding can refuse a library it does not know. Option structs
 * start with `struct_size` (set it to sizeof the struct you were compiled
 * with) so that fields can be added at their end.
 *
 * Errors: no C++ exception crosses this interface and nothing aborts on bad
 * input. Every function that can fail returns a `kopt_error *`: NULL on
 * success, otherwise an error object whose message (kopt_error_message) names
 * the cause, e.g. "input.mlir:3:8: error: 'kopt.matmul' op ..." for a
 * compile error with its location, or "function 'forward': argument 1 ('w'):
 * null device pointer". Free it with kopt_error_free. Output parameters are
 * left untouched on failure.
 *
 * Threads: every function may be called from any thread. kopt_compile calls
 * on different threads run concurrently (each has its own MLIR context). A
 * kopt_module may be shared between threads: its launches are serialized by
 * a lock per module (a launch only enqueues work, so the lock is held for
 * microseconds).
 *
 * Launch contract (docs/capi.md): a launch allocates nothing, synchronizes
 * nothing and enqueues every operation on the caller's stream. The caller
 * passes a device pointer per function argument (inputs, then outputs, as the
 * manifest's functions[].args list them) and one workspace region of at least
 * kopt_function_workspace_bytes bytes, from which the function's
 * intermediate buffers are carved (256-byte aligned). TMA tensor maps are
 * re-encoded on the host and copied in stream order when buffer addresses
 * change, so new addresses never need a context-wide synchronization.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KOPT_C_KOPT_H
#define KOPT_C_KOPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KOPT_C_EXPORT __attribute__((visibility("default")))
#else
#define KOPT_C_EXPORT
#endif

/** The version of the declarations in this header. */
#define KOPT_C_API_VERSION 1

/** KOPT_C_API_VERSION of the library. */
KOPT_C_EXPORT int kopt_c_api_version(void);
/** "kopt 0.x (LLVM 22.1.8)" or "kopt 0.x (runtime only)". Static storage. */
KOPT_C_EXPORT const char *kopt_version_string(void);

/*===-- Errors ------------------------------------------------------------===*/

typedef struct kopt_error kopt_error;
/** The message (UTF-8, NUL-terminated), valid until kopt_error_free. */
KOPT_C_EXPORT const char *kopt_error_message(const kopt_error *error);
/** Frees an error (NULL is allowed). */
KOPT_C_EXPORT void kopt_error_free(kopt_error *error);

/*===-- Compiling ---------------------------------------------------------===*/

/** Options of kopt_compile; zero-initialize, set struct_size, then the
 *  fields you need. A NULL or empty string means the default. */
typedef struct kopt_compile_options {
  size_t struct_size;
  /** Target GPU, default "sm_90a". */
  const char *chip;
  /** PTX features, default "+ptx80". */
  const char *features;
  /** LLVM optimization level 0-3; -1 (or 0 struct_size) means 3. */
  int opt_level;
  /** CUDA toolkit whose libdevice is linked (default $CUDA_HOME, then
   *  /usr/local/cuda). */
  const char *cuda_path;
  /** A JSON file of matmul schedules (docs/schedules.md). */
  const char *schedule_file;
  /** kopt-pack-operands' min-reuse: 0 (or a zeroed struct) means the default
   *  (128), a negative value never packs (lib/CAPI/Compile.cpp). */
  int64_t pack_min_reuse;
  /** Name recorded for the source in diagnostics (default "<kopt_compile>"). */
  const char *source_name;
  /** PTX file name recorded in the manifest's `ptx` field (default
   *  "kernels.ptx"). */
  const char *ptx_file_name;
  /** Non-zero: one kernel per op (kopt-fuse's fuse=false); 0 (the default):
   *  elementwise chains, row ops with their elementwise neighbours and
   *  matmuls with their epilogues fused (docs/compiler.md). */
  int no_fusion;
  /** A JSON file of fusion plan overrides (kopt-fuse's plan=FILE:
   *  {"split": [kernel names]}, docs/compiler.md); NULL: none. */
  const char *fusion_plan_file;
  /** A tuning database (SQLite, kopt-tune --db, docs/tuning.md): each matmul
   *  kernel gets its workload's best schedule recorded by this kopt version
   *  on a GPU, else the heuristic's; NULL: none. */
  const char *tuning_db_file;
} kopt_compile_options;

/** The result of a compile: PTX text and launch manifest JSON. */
typedef struct kopt_compiled kopt_compiled;

/** Compiles `mlir_text` (`length` bytes; the text need not be
 *  NUL-terminated) of kopt ops through the --kopt-to-ptx pipeline. Parse,
 *  verification and pipeline errors come back with their locations, every
 *  diagnostic on its own line. Fails with "compiler not built" in a
 *  runtime-only library. `options` may be NULL. */
KOPT_C_EXPORT kopt_error *kopt_compile(const char *mlir_text, size_t length,
                                       const kopt_compile_options *options,
                                       kopt_compiled **result);
/** The PTX text (NUL-terminated; `length` may be NULL). */
KOPT_C_EXPORT const char *kopt_compiled_ptx(const kopt_compiled *compiled,
                                            size_t *length);
/** The launch manifest (docs/manifest.md), JSON text (NUL-terminated). */
KOPT_C_EXPORT const char *kopt_compiled_manifest(const kopt_compiled *compiled,
                                                 size_t *length);
/** Writes the PTX to `ptx_path` and the manifest beside it (.json), each
 *  through a temporary file and a rename. The manifest's `ptx` field is
 *  rewritten to the PTX file's name. */
KOPT_C_EXPORT kopt_error *kopt_compiled_write(const kopt_compiled *compiled,
                                              const char *ptx_path);
KOPT_C_EXPORT void kopt_compiled_free(kopt_compiled *compiled);

/*===-- Loading and launching ---------------------------------------------===*/

typedef struct kopt_module kopt_module;

/** Parses and validates `manifest_json`, then loads `ptx` (JIT-compiled by
 *  the driver) on device `device` (its primary context, the one CUDA's
 *  runtime API and PyTorch use). Fails with the manifest error (naming the
 *  field), "no CUDA driver: ..." or the JIT's log. */
KOPT_C_EXPORT kopt_error *kopt_module_load(const char *ptx, size_t ptx_length,
                                           const char *manifest_json,
                                           size_t manifest_length, int device,
                                           kopt_module **result);
/** Parses and validates `manifest_json` (`length` bytes) with the reader
 *  kopt_module_load uses, without a driver or GPU: NULL when it is a valid
 *  launch manifest, else the error naming the field, e.g. "k.json:
 *  kernels[0].tensor_maps[0].box[1]: 64, but schedule.block_m is 128".
 *  `source_name` prefixes the message (NULL: "<manifest>"). The PTX file it
 *  names is not read. */
KOPT_C_EXPORT kopt_error *kopt_manifest_validate(const char *manifest_json,
                                                 size_t length,
                                                 const char *source_name);
/** Reads a manifest file and the PTX it names (relative to its folder). */
KOPT_C_EXPORT kopt_error *kopt_module_load_file(const char *manifest_path,
                                                int device,
                                                kopt_module **result);
/** Unloads the module and frees its tensor-map buffers. The caller must make
 *  sure no launch of it is still running. */
KOPT_C_EXPORT void kopt_module_free(kopt_module *module);

/** The manifest's `functions` count and names (static until the module is
 *  freed). */
KOPT_C_EXPORT size_t kopt_module_num_functions(const kopt_module *module);
KOPT_C_EXPORT const char *kopt_module_function_name(const kopt_module *module,
                                                    size_t index);
/** The manifest the module was loaded from, as JSON text. */
KOPT_C_EXPORT const char *kopt_module_manifest(const kopt_module *module);

/** Element types and roles of function arguments, as the manifest names
 *  them ("f32", "f16", "bf16"; "input", "output"). */
enum { KOPT_DTYPE_F32 = 0, KOPT_DTYPE_F16 = 1, KOPT_DTYPE_BF16 = 2 };
enum { KOPT_ROLE_INPUT = 0, KOPT_ROLE_OUTPUT = 1 };

/** One argument of a function: a dense row-major (C-order) tensor. */
typedef struct kopt_arg_info {
  const char *name;     /**< as in the manifest; static until module free */
  int role;             /**< KOPT_ROLE_* */
  int dtype;            /**< KOPT_DTYPE_* */
  size_t rank;          /**< 0 for a scalar */
  const int64_t *shape; /**< rank entries; static until module free */
  uint64_t bytes;       /**< bytes of the whole tensor */
} kopt_arg_info;

/** The number of arguments of `function` (inputs, then outputs). */
KOPT_C_EXPORT kopt_error *kopt_function_num_args(const kopt_module *module,
                                                 const char *function,
                                                 size_t *num_args);
/** The `index`-th argument of `function`. */
KOPT_C_EXPORT kopt_error *kopt_function_arg(const kopt_module *module,
                                            const char *function, size_t index,
                                            kopt_arg_info *info);

/** Register and memory use of a loaded kernel (cuFuncGetAttribute). */
typedef struct kopt_kernel_resources {
  int registers;             /**< registers per thread */
  int local_bytes;           /**< local memory per thread (spills), bytes */
  int static_shared_bytes;   /**< static shared memory per block, bytes */
  int max_threads_per_block; /**< the most threads a block may have */
} kopt_kernel_resources;

/** The resources of the kernel named `kernel` (a manifest `kernels[].name`)
 *  as the driver loaded it. */
KOPT_C_EXPORT kopt_error *
kopt_module_kernel_resources(kopt_module *module, const char *kernel,
                             kopt_kernel_resources *resources);

/** Bytes of the workspace region a launch of `function` needs (0 when it has
 *  no intermediate buffers). */
KOPT_C_EXPORT kopt_error *
kopt_function_workspace_bytes(const kopt_module *module, const char *function,
                              uint64_t *bytes);

/** Launch flags. */
enum {
  /** The split-K scratch inside the workspace is already zero (the caller
   *  keeps one workspace per function and stream for its lifetime): skip
   *  the stream-ordered zero-fill that every launch does otherwise. */
  KOPT_LAUNCH_WORKSPACE_ZEROED = 1u << 0,
};

/** Enqueues every kernel of `function` on `stream` (a CUstream; NULL is the
 *  legacy default stream). `args` holds one device pointer per argument of
 *  the function, in manifest order (num_args of them); `workspace` is a
 *  device region of `workspace_bytes` bytes (at least
 *  kopt_function_workspace_bytes; 0 / 0 when none is needed). Checked
 *  before anything is enqueued: the function exists, the argument count,
 *  null pointers, 16-byte alignment of every pointer, the workspace size and
 *  its 256-byte alignment, and that `stream` belongs to the module's
 *  context. Allocates nothing, synchronizes nothing; kernel faults show at
 *  the caller's next synchronization. */
KOPT_C_EXPORT kopt_error *
kopt_function_launch(kopt_module *module, const char *function,
                     const uint64_t *args, size_t num_args, uint64_t workspace,
                     uint64_t workspace_bytes, void *stream, uint32_t flags);

/*===-- Tuning database ---------------------------------------------------===*/

/** The tuning database (SQLite, docs/tuning.md) for frameworks that measure
 *  choices of their own, such as the PyTorch backend's choice between kopt's
 *  kernels and PyTorch's for a partition. Available when the compiler is
 *  built (a runtime-only library says so). */

/** Adds one trial record, a JSON object in the format of `kopt-tune
 *  --export` lines (docs/tuning.md: workload, ops, kopt_version, schedule,
 *  status required), to the database at `db_path` (created when missing), in
 *  one transaction. An empty kopt_version is this library's version; an
 *  empty time is now. A malformed record is an error naming the key; a file
 *  that is not a kopt tuning database is an error and is never written. */
KOPT_C_EXPORT kopt_error *kopt_tuning_db_add(const char *db_path,
                                             const char *record_json,
                                             size_t length);
/** The usable trials (status "ok", correct, finite median; measurer "gpu")
 *  of `workload` recorded by this kopt version, as a JSON array of records
 *  in id order (`[]` when the file holds none, is empty or does not exist;
 *  text that is not UTF-8 comes back as U+FFFD). `*json`
 *  is NUL-terminated; free it with kopt_string_free. */
KOPT_C_EXPORT kopt_error *kopt_tuning_db_trials(const char *db_path,
                                                const char *workload,
                                                char **json);
/** Frees a string the library returned (NULL is allowed). */
KOPT_C_EXPORT void kopt_string_free(char *text);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KOPT_C_KOPT_H */
