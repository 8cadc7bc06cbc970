// Functions of nested modules are not compiled: an error says so instead of
// dropping them silently.
// RUN: kopt-opt %s --kopt-check-target -verify-diagnostics -o /dev/null

func.func @g(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kopt.tanh %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// expected-error @+1 {{kopt compiles the functions of the top-level module only; move them out of this nested module}}
module @inner {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    %0 = kopt.exp %x : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
