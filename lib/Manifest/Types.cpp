//===- Types.cpp - Names of the manifest's enums, shapes, lookups ---------===//
//
// See include/kopt/Manifest/Manifest.h and docs/manifest.md.
//
//===----------------------------------------------------------------------===//

#include "kopt/Manifest/Manifest.h"

#include <cmath>
#include <cstdio>

namespace kopt::manifest {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t numBytes(const Shape &shape, DType dtype) {
  return numElements(shape) * dtypeSize(dtype);
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool isValidUTF8(std::string_view text) {
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n)
      return false;
    for (size_t j = 1; j < len; ++j) {
      unsigned char cc = static_cast<unsigned char>(text[i + j]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF.
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

const char *roleName(Role role) {
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Output:
    return "output";
  case Role::Workspace:
    return "workspace";
  }
  return "?";
}

std::optional<Role> parseRole(std::string_view name) {
  for (Role r : {Role::Input, Role::Output, Role::Workspace})
    if (name == roleName(r))
      return r;
  return std::nullopt;
}

const char *kernelClassName(KernelClass cls) {
  switch (cls) {
  case KernelClass::Elementwise:
    return "elementwise";
  case KernelClass::Row:
    return "row";
  case KernelClass::Matmul:
    return "matmul";
  case KernelClass::Pack:
    return "pack";
  }
  return "?";
}

std::optional<KernelClass> parseKernelClass(std::string_view name) {
  for (KernelClass c : {KernelClass::Elementwise, KernelClass::Row,
                        KernelClass::Matmul, KernelClass::Pack})
    if (name == kernelClassName(c))
      return c;
  return std::nullopt;
}

namespace {
struct OpName {
  OpKind op;
  const char *name;
};
constexpr OpName kOpNames[] = {
    {OpKind::Matmul, "matmul"},   {OpKind::Add, "add"},
    {OpKind::Sub, "sub"},         {OpKind::Mul, "mul"},
    {OpKind::Div, "div"},         {OpKind::Max, "max"},
    {OpKind::Min, "min"},         {OpKind::Exp, "exp"},
    {OpKind::Neg, "neg"},         {OpKind::Abs, "abs"},
    {OpKind::Sqrt, "sqrt"},       {OpKind::Rsqrt, "rsqrt"},
    {OpKind::Tanh, "tanh"},       {OpKind::Log, "log"},
    {OpKind::Log1p, "log1p"},     {OpKind::Sigmoid, "sigmoid"},
    {OpKind::Relu, "relu"},       {OpKind::Silu, "silu"},
    {OpKind::Gelu, "gelu"},       {OpKind::Cast, "cast"},
    {OpKind::Reduce, "reduce"},   {OpKind::Softmax, "softmax"},
    {OpKind::RmsNorm, "rmsnorm"}, {OpKind::LayerNorm, "layernorm"},
    {OpKind::Pack, "pack"},
};
} // namespace

const char *opName(OpKind op) {
  for (const OpName &entry : kOpNames)
    if (entry.op == op)
      return entry.name;
  return "?";
}

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (const OpName &entry : kOpNames)
    if (name == entry.name)
      return entry.op;
  return std::nullopt;
}

bool isBinaryOp(OpKind op) {
  switch (op) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min:
    return true;
  default:
    return false;
  }
}

bool isUnaryOp(OpKind op) {
  switch (op) {
  case OpKind::Exp:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Log:
  case OpKind::Log1p:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Silu:
  case OpKind::Gelu:
  case OpKind::Cast:
    return true;
  default:
    return false;
  }
}

std::vector<std::string> operandNames(OpKind kind, size_t *numRequired) {
  std::vector<std::string> names;
  size_t required;
  if (kind == OpKind::Matmul) {
    names = {"a", "b"};
    required = 2;
  } else if (isBinaryOp(kind)) {
    names = {"lhs", "rhs"};
    required = 2;
  } else if (kind == OpKind::RmsNorm) {
    names = {"input", "weight"};
    required = 1;
  } else if (kind == OpKind::LayerNorm) {
    names = {"input", "weight", "bias"};
    required = 1;
  } else {
    names = {"input"};
    required = 1;
  }
  if (numRequired)
    *numRequired = required;
  return names;
}

const char *geluApproximationName(GeluApproximation a) {
  return a == GeluApproximation::Tanh ? "tanh" : "none";
}

const char *reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Mean:
    return "mean";
  }
  return "?";
}

std::optional<std::string> epsError(double eps) {
  if (eps >= 0.0 && eps <= 1.0)
    return std::nullopt;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", eps);
  return std::string("eps must be in [0, 1], got ") + buf;
}

const std::string *OpSpec::operand(std::string_view operandName) const {
  for (const OpOperand &o : operands)
    if (o.name == operandName)
      return &o.value;
  return nullptr;
}

OpSpec opOverParams(OpKind kind, const OpAttrs &attrs,
                    const std::vector<TensorSpec> &params) {
  OpSpec op;
  op.kind = kind;
  op.attrs = attrs;
  for (const TensorSpec &p : params) {
    if (p.role == Role::Input)
      op.operands.push_back({p.name, p.name});
    else if (p.role == Role::Output)
      op.result = p.name;
  }
  return op;
}

const TensorSpec *KernelSpec::findParam(std::string_view paramName) const {
  for (const TensorSpec &p : params)
    if (p.name == paramName)
      return &p;
  return nullptr;
}

const TensorSpec *KernelSpec::findValue(std::string_view valueName) const {
  if (const TensorSpec *p = findParam(valueName))
    return p;
  for (const TensorSpec &v : values)
    if (v.name == valueName)
      return &v;
  return nullptr;
}

const OpSpec *KernelSpec::singleOp() const {
  return ops.size() == 1 ? &ops.front() : nullptr;
}

const OpSpec *KernelSpec::findOp(OpKind kind) const {
  for (const OpSpec &op : ops)
    if (op.kind == kind)
      return &op;
  return nullptr;
}

std::string KernelSpec::opsName() const {
  std::string s;
  for (const OpSpec &op : ops) {
    if (!s.empty())
      s += "+";
    s += opName(op.kind);
  }
  return s;
}

int64_t KernelSpec::totalParamBytes() const {
  int64_t total = 0;
  for (const TensorSpec &p : params)
    if (p.role != Role::Workspace)
      total += p.numBytes();
  return total;
}

const BufferSpec *FunctionSpec::findBuffer(int64_t id) const {
  for (const BufferSpec &b : buffers)
    if (b.id == id)
      return &b;
  return nullptr;
}

const KernelSpec *Manifest::findKernel(std::string_view kernelName) const {
  for (const KernelSpec &k : kernels)
    if (k.name == kernelName)
      return &k;
  return nullptr;
}

} // namespace kopt::manifest
