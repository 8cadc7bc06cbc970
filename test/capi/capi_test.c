/*===- capi_test.c - The kopt C API, exercised from C ---------------------===//
 *
 * Like MLIR's standalone test/CAPI: a C program (so kopt-c/kopt.h is checked
 * as C) that calls every function of the C API, good and bad inputs alike.
 *
 *   kopt-capi-test compile              compiling (needs the compiler and
 *                                       the CUDA toolkit's libdevice)
 *   kopt-capi-test launch MANIFEST.json loading and launching, against the
 *                                       fake driver of test/unit/FakeCuda
 *                                       (LD_LIBRARY_PATH) and its ok.json
 *
 * Prints one line per check and exits non-zero when any check fails.
 *===----------------------------------------------------------------------===*/

#include "kopt-c/kopt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok)
    ++failures;
}

/* The call failed and its message contains `needle`. */
static void expectError(kopt_error *error, const char *needle,
                        const char *what) {
  const char *message = error ? kopt_error_message(error) : "(no error)";
  int ok = error != NULL && strstr(message, needle) != NULL;
  if (!ok)
    printf("  message: %s\n  expected to contain: %s\n", message, needle);
  expect(ok, what);
  kopt_error_free(error);
}

static void expectOk(kopt_error *error, const char *what) {
  if (error)
    printf("  message: %s\n", kopt_error_message(error));
  expect(error == NULL, what);
  kopt_error_free(error);
}

static const char kSoftmax[] =
    "func.func @forward(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {\n"
    "  %y = kopt.softmax %x : tensor<64x1024xf32>\n"
    "  return %y : tensor<64x1024xf32>\n"
    "}\n";

static int testCompile(void) {
  expect(kopt_c_api_version() == KOPT_C_API_VERSION, "kopt_c_api_version");
  expect(strstr(kopt_version_string(), "kopt ") == kopt_version_string(),
         "kopt_version_string starts with 'kopt '");
  kopt_error_free(NULL);

  kopt_compiled *compiled = NULL;
  expectOk(kopt_compile(kSoftmax, strlen(kSoftmax), NULL, &compiled),
           "compile a softmax with default options");
  if (compiled) {
    size_t n = 0;
    const char *ptx = kopt_compiled_ptx(compiled, &n);
    expect(ptx && n == strlen(ptx) && strstr(ptx, ".entry") &&
               strstr(ptx, ".target sm_90a"),
           "the PTX has an .entry for sm_90a");
    const char *manifest = kopt_compiled_manifest(compiled, &n);
    expect(manifest && strstr(manifest, "\"kopt_manifest_version\"") &&
               strstr(manifest, "\"kernels.ptx\""),
           "the manifest names kernels.ptx");
    expectOk(kopt_manifest_validate(manifest, n, NULL),
             "the compiled manifest validates without a driver");
    expectError(kopt_manifest_validate(manifest, n / 2, "half.json"),
                "half.json: invalid JSON", "a truncated manifest is refused");
    /* A field the reader checks: the kernel's block of 4096 threads. */
    char *edited = malloc(n + 16);
    const char *block = manifest ? strstr(manifest, "\"block\"") : NULL;
    const char *digit = block ? strpbrk(block, "0123456789") : NULL;
    if (edited && digit) {
      size_t at = (size_t)(digit - manifest);
      memcpy(edited, manifest, at);
      size_t len = at + (size_t)sprintf(edited + at, "4096");
      while (manifest[at] >= '0' && manifest[at] <= '9')
        ++at;
      strcpy(edited + len, manifest + at);
      expectError(kopt_manifest_validate(edited, strlen(edited), "e.json"),
                  "e.json: kernels[0] (softmax_0).block[0]: value 4096",
                  "validate names the bad field");
    }
    free(edited);
    char dir[] = "/tmp/kopt-capi-XXXXXX";
    if (mkdtemp(dir)) {
      char ptxPath[256], jsonPath[256];
      snprintf(ptxPath, sizeof ptxPath, "%s/soft.ptx", dir);
      snprintf(jsonPath, sizeof jsonPath, "%s/soft.json", dir);
      expectOk(kopt_compiled_write(compiled, ptxPath), "write soft.ptx");
      expect(access(ptxPath, R_OK) == 0 && access(jsonPath, R_OK) == 0,
             "soft.ptx and soft.json exist");
      snprintf(ptxPath, sizeof ptxPath, "%s/soft.json", dir);
      expectError(kopt_compiled_write(compiled, ptxPath),
                  "must not end in .json", "write refuses a .json PTX path");
      expectError(kopt_compiled_write(compiled, "/nonexistent-dir/x.ptx"),
                  "kopt_compiled_write", "write to a missing folder fails");
      snprintf(ptxPath, sizeof ptxPath, "rm -rf %s", dir);
      if (system(ptxPath) != 0)
        printf("note: could not remove %s\n", dir);
    }
    kopt_compiled_free(compiled);
  }
  kopt_compiled_free(NULL);

  kopt_compile_options opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.source_name = "bad.mlir";
  const char bad[] = "func.func @f() {\n  %0 = kopt.nonsense\n}\n";
  compiled = NULL;
  expectError(kopt_compile(bad, strlen(bad), &opts, &compiled),
              "bad.mlir:2:", "a parse error carries its location");
  expect(compiled == NULL, "no result on failure");
  const char empty[] = "module {}\n";
  expectError(kopt_compile(empty, strlen(empty), &opts, &compiled),
              "nothing to compile", "a module without kopt ops is refused");
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, NULL),
              "result is null", "a null result pointer is refused");
  expectError(kopt_compile(NULL, 5, &opts, &compiled), "mlir_text is null",
              "null text is refused");
  opts.opt_level = 9;
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, &compiled),
              "opt_level 9", "opt_level out of range is refused");
  opts.opt_level = 0;
  opts.ptx_file_name = "dir/k.ptx";
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, &compiled),
              "without a folder", "a ptx_file_name with a folder is refused");
  opts.ptx_file_name = NULL;
  opts.chip = "sm_10";
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, &compiled),
              "sm_10", "an unsupported chip is refused by name");
  opts.chip = NULL;
  opts.schedule_file = "/nonexistent/schedule.json";
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, &compiled),
              "/nonexistent/schedule.json", "a missing schedule file is named");
  opts.schedule_file = NULL;
  opts.struct_size = 0;
  expectError(kopt_compile(kSoftmax, strlen(kSoftmax), &opts, &compiled),
              "struct_size", "struct_size 0 is refused");
  /* Invalid UTF-8 in the text is a diagnostic, not a crash. */
  const char utf8[] = "func.func @f\xff\xfe() {\n  return\n}\n";
  opts.struct_size = sizeof opts;
  kopt_error *e = kopt_compile(utf8, strlen(utf8), &opts, &compiled);
  expect(e != NULL, "invalid UTF-8 in the source is an error");
  kopt_error_free(e);
  return failures;
}

typedef int (*MemAllocFn)(unsigned long long *, size_t);

static int testLaunch(const char *manifestPath) {
  kopt_module *module = NULL;
  expectError(kopt_module_load_file("/nonexistent.json", 0, &module),
              "/nonexistent.json", "a missing manifest is named");
  expectError(kopt_module_load("x", 1, "{", 1, 0, &module), "<manifest>",
              "malformed manifest JSON is refused");
  expectError(kopt_module_load_file(manifestPath, 7, &module), "device 7",
              "a device that does not exist is refused");
  expectOk(kopt_module_load_file(manifestPath, 0, &module),
           "load the fake manifest");
  if (!module)
    return failures;
  expect(kopt_module_num_functions(module) == 1, "one function");
  const char *first = kopt_module_function_name(module, 0);
  expect(first != NULL && strcmp(first, "forward") == 0, "it is 'forward'");
  expect(kopt_module_function_name(module, 5) == NULL,
         "out-of-range function index gives NULL");
  expect(strstr(kopt_module_manifest(module), "add_bcast_f32") != NULL,
         "the manifest text is kept");
  size_t nargs = 0;
  expectOk(kopt_function_num_args(module, "forward", &nargs), "num_args");
  expect(nargs == 3, "forward takes 3 arguments");
  kopt_arg_info info;
  expectOk(kopt_function_arg(module, "forward", 1, &info), "arg 1");
  expect(info.role == KOPT_ROLE_INPUT && info.dtype == KOPT_DTYPE_F32 &&
             info.rank == 1 && info.shape[0] == 128 && info.bytes == 512,
         "arg 1 is an f32[128] input");
  expectError(kopt_function_arg(module, "forward", 3, &info), "out of range",
              "arg index out of range");
  expectError(kopt_function_num_args(module, "backward", &nargs),
              "it has: forward", "an unknown function lists the known ones");
  kopt_kernel_resources res;
  memset(&res, 0, sizeof res);
  expectOk(kopt_module_kernel_resources(module, "add_bcast_f32", &res),
           "kernel resources");
  expect(res.registers == 32 && res.max_threads_per_block == 1024,
         "the fake driver's 32 registers, 1024 threads");
  expectError(kopt_module_kernel_resources(module, "nope", &res),
              "no kernel named 'nope'", "resources of an unknown kernel");
  expectError(kopt_module_kernel_resources(module, "add_bcast_f32", NULL),
              "must not be null", "resources into NULL");
  expectError(kopt_manifest_validate(NULL, 0, NULL), "is null",
              "validate refuses NULL");
  uint64_t ws = 99;
  expectOk(kopt_function_workspace_bytes(module, "forward", &ws),
           "workspace bytes");
  expect(ws == 0, "forward needs no workspace");

  /* Device memory from the (fake) driver itself. */
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  MemAllocFn memAlloc = cuda ? (MemAllocFn)dlsym(cuda, "cuMemAlloc_v2") : NULL;
  expect(memAlloc != NULL, "the driver's cuMemAlloc_v2");
  if (!memAlloc)
    return failures;
  unsigned long long a = 0, b = 0, out = 0;
  memAlloc(&a, 64 * 128 * 4);
  memAlloc(&b, 128 * 4);
  memAlloc(&out, 64 * 128 * 4);
  uint64_t args[3] = {a, b, out};
  expectOk(kopt_function_launch(module, "forward", args, 3, 0, 0, NULL, 0),
           "launch forward on the legacy stream");
  expectError(kopt_function_launch(module, "forward", args, 2, 0, 0, NULL, 0),
              "takes 3 arguments, got 2", "a wrong argument count");
  uint64_t nulls[3] = {a, 0, out};
  expectError(kopt_function_launch(module, "forward", nulls, 3, 0, 0, NULL, 0),
              "argument 1 ('arg1'): null device pointer", "a null pointer");
  uint64_t odd[3] = {a + 4, b, out};
  expectError(kopt_function_launch(module, "forward", odd, 3, 0, 0, NULL, 0),
              "is not 16-byte aligned", "a misaligned pointer");
  expectError(
      kopt_function_launch(module, "forward", args, 3, 0, 0, (void *)0x1234, 0),
      "cuStreamGetCtx", "a pointer that is not a stream");
  expectError(kopt_function_launch(module, "forward", args, 3, 0, 0, NULL, 8),
              "unknown flags", "unknown flags");
  expectError(kopt_function_launch(module, "nope", args, 3, 0, 0, NULL, 0),
              "no function named 'nope'", "an unknown function");
  expectError(kopt_function_launch(NULL, "forward", args, 3, 0, 0, NULL, 0),
              "module is null", "a null module");
  expectError(kopt_function_launch(module, "forward", NULL, 3, 0, 0, NULL, 0),
              "args is null", "null args");
  kopt_module_free(module);
  kopt_module_free(NULL);
  return failures;
}

/* kopt_tuning_db_add / kopt_tuning_db_trials on a database in `dir`. */
static int testTuningDb(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/capi-tuning.db", dir);
  unlink(path);
  char *json = NULL;
  expectOk(kopt_tuning_db_trials(path, "w", &json), "trials of a missing file");
  expect(json && strcmp(json, "[]") == 0, "a missing file holds no trials");
  kopt_string_free(json);
  expect(access(path, F_OK) != 0, "reading does not create the file");
  static const char rec[] =
      "{\"workload\": \"w\", \"ops\": \"partition\", \"schedule\": "
      "{\"impl\": \"kopt\"}, \"status\": \"ok\", \"measurer\": \"gpu\", "
      "\"median_ms\": 0.5, \"correct\": true, \"kopt_version\": \"\"}";
  expectOk(kopt_tuning_db_add(path, rec, strlen(rec)), "add a record");
  json = NULL;
  expectOk(kopt_tuning_db_trials(path, "w", &json), "trials after add");
  expect(json && strstr(json, "\"median_ms\":0.5") &&
             strstr(json, "\"impl\":\"kopt\""),
         "the record comes back");
  kopt_string_free(json);
  kopt_string_free(NULL);
  expectError(kopt_tuning_db_add(path, "{\"workload\": 1}", 15), "workload",
              "a wrongly-typed key is named");
  expectError(kopt_tuning_db_add(path, "[1,", 3), "not a JSON object",
              "malformed JSON");
  expectError(kopt_tuning_db_add("", rec, strlen(rec)), "db_path is empty",
              "empty path");
  expectError(kopt_tuning_db_trials(path, "", &json), "workload is empty",
              "empty workload");
  unlink(path);
  return failures;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "compile") == 0)
    testCompile();
  else if (argc >= 3 && strcmp(argv[1], "tuning-db") == 0)
    testTuningDb(argv[2]);
  else if (argc >= 3 && strcmp(argv[1], "launch") == 0)
    testLaunch(argv[2]);
  else {
    fprintf(stderr,
            "usage: %s compile | tuning-db DIR | launch MANIFEST.json\n",
            argv[0]);
    return 2;
  }
  printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
