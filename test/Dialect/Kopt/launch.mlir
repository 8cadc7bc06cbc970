// kopt.launch (made by kopt-lower-to-gpu): it round-trips, and its verifier
// resolves the kernel through the module's symbol table.
// RUN: kopt-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK:         kopt.launch @kernels::@k blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{.*}} args(%{{.*}}, %{{.*}} : memref<4xf32>, memref<4xf32>) {kernel_class = "elementwise", num_inputs = 1 : i64, num_outputs = 1 : i64, source = {attrs = {}, name = "exp", params = ["input", "result"]}}
func.func @ok(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x, %y : memref<4xf32>, memref<4xf32>) {kernel_class = "elementwise", num_inputs = 1, num_outputs = 1, source = {attrs = {}, name = "exp", params = ["input", "result"]}}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @no_container(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op kernel container 'missing' is not defined}}
  kopt.launch @missing::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}

// -----

func.func @not_a_kernel(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op '@kernels::@f' does not name a kernel function (a gpu.func with the `kernel` attribute)}}
  kopt.launch @kernels::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @f(%a: memref<4xf32>) {
    gpu.return
  }
}

// -----

func.func @missing_kernel(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op '@kernels::@nope' does not name a kernel function}}
  kopt.launch @kernels::@nope blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
}

// -----

func.func @flat_ref(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op expects a kernel reference @container::@kernel, got @kernels}}
  kopt.launch @kernels blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
}

// -----

func.func @arg_count(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op passes 1 args to 'k', which has 2 parameters}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @arg_type(%x: memref<4xf16>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op arg #0 has type 'memref<4xf16>', the kernel's parameter has type 'memref<4xf32>'}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf16>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @io_counts(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op has 1 args, fewer than num_inputs (1) + num_outputs (1)}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 1, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @kernel_class(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op unknown kernel_class 'attention'}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "attention", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @negative(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op attribute 'num_inputs' failed to satisfy constraint}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = -1, num_outputs = 1}
  return
}

// -----

// A container that is neither a gpu.module nor a gpu.binary.
func.func private @kernels(memref<4xf32>)
func.func @container_is_func(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op kernel container 'kernels' is a 'func.func', not a gpu.module or gpu.binary}}
  kopt.launch @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}

// -----

func.func @self_reference(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op kernel container 'self_reference' is a 'func.func', not a gpu.module or gpu.binary}}
  kopt.launch @self_reference::@self_reference blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}

// -----

func.func @flat_to_func(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op expects a kernel reference @container::@kernel, got @flat_to_func}}
  kopt.launch @flat_to_func blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {kernel_class = "elementwise", num_inputs = 0, num_outputs = 1}
  return
}

// -----

// cluster_size: 3 positive sizes, at most 8 blocks in all, dividing a constant grid.
// CHECK-LABEL: func.func @cluster_ok
// CHECK:         cluster_size = array<i32: 8, 1, 1>
func.func @cluster_ok(%x: memref<4xf32>) {
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  kopt.launch @kernels::@k blocks in (%c16, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {cluster_size = array<i32: 8, 1, 1>, kernel_class = "row", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

func.func @cluster_too_big(%x: memref<4xf32>) {
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op cluster_size must be 3 positive sizes (x, y, z) of at most 8 blocks in all}}
  kopt.launch @kernels::@k blocks in (%c16, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {cluster_size = array<i32: 16, 1, 1>, kernel_class = "row", num_inputs = 0, num_outputs = 1}
  return
}
func.func @cluster_rank(%x: memref<4xf32>) {
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op cluster_size must be 3 positive sizes (x, y, z) of at most 8 blocks in all}}
  kopt.launch @kernels::@k blocks in (%c16, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {cluster_size = array<i32: 2, 0, 1>, kernel_class = "row", num_inputs = 0, num_outputs = 1}
  return
}
func.func @cluster_grid(%x: memref<4xf32>) {
  %c12 = arith.constant 12 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  // expected-error @+1 {{'kopt.launch' op grid size 12 along x is not a multiple of the cluster size 8}}
  kopt.launch @kernels::@k blocks in (%c12, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%x : memref<4xf32>) {cluster_size = array<i32: 8, 1, 1>, kernel_class = "row", num_inputs = 0, num_outputs = 1}
  return
}
gpu.module @kernels {
  gpu.func @k(%a: memref<4xf32>) kernel {
    gpu.return
  }
}
