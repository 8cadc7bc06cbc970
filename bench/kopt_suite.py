"""The kopt benchmark suite: reading bench/suite.json and everything derived from it
that needs no GPU and no third-party package (Python standard library only).

Used by bench/gen_mlir.py (kopt .mlir per problem), bench/compile_suite.py (the
compile-only mode), bench/run_suite.py (the GPU runner: PyTorch source of each
problem, FLOPs, bytes, roofline times, SOL scores, aggregates) and
bench/report.py (Markdown and plots). docs/benchmarking.md describes the format
and every figure. Launch manifests are checked, loaded and launched by kopt's C++
runtime through the Python package (python/kopt: kopt.validate_manifest, kopt.load,
Function.launch), not here.

A problem is a small graph of kopt ops (docs/ops.md) over named tensors:

    {"name": "llama3_8b_gate_silu_m64_bf16", "model": "Llama-3.1-8B",
     "source": "config.json: ...", "tags": ["gemm", "epilogue", "decode"],
     "inputs": [{"name": "x", "shape": [64, 4096], "dtype": "bf16"}, ...],
     "graph": [{"op": "matmul", "args": ["x", "w_gate"],
                "attrs": {"transpose_b": true}, "out": "gate"},
               {"op": "silu", "args": ["gate"], "out": "act"}],
     "outputs": ["act"]}
"""

import json
import keyword
import math
import os
import re
import statistics
import sys

SUITE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suite.json")

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
BINARY = ("add", "sub", "mul", "div", "max", "min")
UNARY = ("exp", "neg", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu")
ROW = ("reduce", "softmax", "rmsnorm", "layernorm")
OPS = ("matmul",) + BINARY + UNARY + ("gelu", "cast") + ROW
REDUCE_KINDS = ("sum", "max", "mean")
INIT_KINDS = ("uniform", "normal", "const", "causal_mask")

# FLOPs counted per element of the (broadcast) result for the ops that are not
# matmul. These problems are memory-bound, so the counts only place the points on
# the roofline chart; a transcendental function counts as one operation.
FLOPS_PER_ELEMENT = {
    **{op: 1 for op in BINARY},
    **{op: 1 for op in UNARY},
    "sigmoid": 3,  # exp, add, reciprocal
    "silu": 4,     # exp, add, reciprocal, multiply
    "gelu": 5,
    "cast": 0,
}
# Per element of the input row: softmax (max, subtract, exp, add, divide),
# rmsnorm (square, add, multiply twice), layernorm (add, subtract, square, add,
# subtract, multiply twice, add), reduce (one combine).
FLOPS_PER_ROW_ELEMENT = {"softmax": 5, "rmsnorm": 4, "layernorm": 8, "reduce": 1}

# The H200 SXM's datasheet limits (NVIDIA H200 Tensor Core GPU datasheet): dense
# tensor-core rates without sparsity, the FP32 rate of the CUDA cores (the suite's
# f32 GEMMs run without TF32, as kopt's and PyTorch's with allow_tf32 = False) and
# the HBM3e bandwidth.
DATASHEET = {
    "name": "NVIDIA H200 SXM datasheet",
    # tf32: f32 GEMMs that allow TF32 (matmul attrs {"tf32": true}) on tensor cores,
    # 989 TFLOP/s with sparsity, half of it dense.
    "matmul_flops": {"bf16": 989e12, "f16": 989e12, "f32": 67e12, "tf32": 494.5e12},
    "vector_flops": 67e12,
    "hbm_bytes_per_s": 4.8e12,
}

# Relative L2 error allowed for a kopt output against the float64 reference, by the
# output's dtype (docs/benchmarking.md). A problem may override it with
# "tolerance": {"bf16": 2e-2} or a number.
TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
# A problem with a TF32 matmul (matmul attrs {"tf32": true}; a sweep problem's
# "tf32": true) is checked against the float64 product of its unrounded f32 inputs,
# while the GPU cuts every operand to TF32's 10-bit mantissa first (PyTorch with
# allow_tf32 as much as kopt): the error of inputs rounded to f16 precision (f16 has
# the same 10-bit mantissa), far above f32's 1e-5 (about 3e-4 with rounded operands,
# 7e-4 with truncated ones, for uniform(-1, 1) inputs and K of 48 to 4096). Its
# outputs therefore get at least f16's tolerance, as kopt-run does (docs/runtime.md).
TF32_TOLERANCE = TOLERANCE["f16"]

NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


class SuiteError(Exception):
    pass


def numel(shape):
    return math.prod(shape) if shape else 1


def broadcast(a, b):
    """numpy/PyTorch broadcasting of two shapes, or None when incompatible."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if x != 1 and y != 1 else (x if y == 1 else y))
    return list(reversed(out))


def load_suite(path=SUITE_PATH):
    """Reads and validates the suite; returns its dict with every problem's value
    types inferred (problem["values"]: name -> {"shape", "dtype"})."""
    try:
        with open(path) as f:
            suite = json.load(f)
    except (OSError, ValueError) as e:
        raise SuiteError(f"{path}: cannot read the suite: {e}")
    if not isinstance(suite, dict) or suite.get("format_version") != 1:
        raise SuiteError(f"{path}: not a suite of format_version 1")
    problems = suite.get("problems")
    if not isinstance(problems, list) or not problems:
        raise SuiteError(f"{path}: no problems")
    seen = set()
    errors = []
    for i, p in enumerate(problems):
        name = p.get("name") if isinstance(p, dict) else None
        where = f"problem {i}" + (f" ({name})" if name else "")
        try:
            check_problem(p)
        except SuiteError as e:
            errors.append(f"{where}: {e}")
            continue
        if name in seen:
            errors.append(f"{where}: duplicate name")
        seen.add(name)
    if errors:
        raise SuiteError(f"{path}:\n  " + "\n  ".join(errors))
    return suite


def _check_name(kind, name):
    if not isinstance(name, str) or not NAME_RE.match(name) or keyword.iskeyword(name):
        raise SuiteError(f"{kind} name {name!r} must match [a-z_][a-z0-9_]* and not be a "
                         "Python keyword")


def _check_shape_dtype(what, shape, dtype):
    if (not isinstance(shape, list) or
            not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)):
        raise SuiteError(f"{what}: shape {shape!r} must be a list of positive integers")
    if dtype not in DTYPE_BYTES:
        raise SuiteError(f"{what}: dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")


def check_problem(p):
    """Validates one problem and infers the type of every value (p["values"]) and
    of every node (node["shape"], node["dtype"] filled in)."""
    if not isinstance(p, dict):
        raise SuiteError("not an object")
    for key in ("name", "model", "source", "inputs", "graph", "outputs"):
        if key not in p:
            raise SuiteError(f"missing '{key}'")
    _check_name("problem", p["name"])
    if p["name"] in ("torch", "F", "forward"):
        raise SuiteError(f"problem name {p['name']!r} is reserved")
    values = {}
    for x in p["inputs"]:
        _check_name("input", x.get("name"))
        if x["name"] in values:
            raise SuiteError(f"input '{x['name']}' defined twice")
        _check_shape_dtype(f"input '{x['name']}'", x.get("shape"), x.get("dtype"))
        init = x.get("init", {"kind": "uniform", "low": -1.0, "high": 1.0})
        if not isinstance(init, dict) or init.get("kind") not in INIT_KINDS:
            raise SuiteError(f"input '{x['name']}': init must be an object with kind in "
                             f"{', '.join(INIT_KINDS)}")
        if init["kind"] == "causal_mask" and (len(x["shape"]) != 2 or
                                              x["shape"][0] != x["shape"][1]):
            raise SuiteError(f"input '{x['name']}': a causal_mask is square and 2-D")
        values[x["name"]] = {"shape": list(x["shape"]), "dtype": x["dtype"]}
    if not p["graph"]:
        raise SuiteError("empty graph")
    for n in p["graph"]:
        infer_node(n, values)
        if n["out"] in values:
            raise SuiteError(f"value '{n['out']}' defined twice")
        values[n["out"]] = {"shape": n["shape"], "dtype": n["dtype"]}
    inputs = {x["name"] for x in p["inputs"]}
    if not p["outputs"] or len(set(p["outputs"])) != len(p["outputs"]):
        raise SuiteError("outputs must be a non-empty list of distinct values")
    for o in p["outputs"]:
        if o not in values:
            raise SuiteError(f"output '{o}' is not defined")
        if o in inputs:
            raise SuiteError(f"output '{o}' is an input (kopt computes every result)")
    expect = (p.get("kopt") or {}).get("expect", "supported")
    if expect not in ("supported", "unsupported"):
        raise SuiteError("kopt.expect must be 'supported' or 'unsupported'")
    tol = p.get("tolerance")
    if tol is not None and not isinstance(tol, (int, float, dict)):
        raise SuiteError("tolerance must be a number or an object dtype -> number")
    p["values"] = values
    return p


def infer_node(n, values):
    """Fills n["shape"] and n["dtype"] (the result type) from the operands' types,
    with the rules of docs/ops.md; batched matmul follows torch.matmul (kopt rejects
    it, which the suite may record as expected)."""
    op = n.get("op")
    if op not in OPS:
        raise SuiteError(f"unknown op {op!r} (one of: {' '.join(OPS)})")
    _check_name("value", n.get("out"))
    args = n.get("args")
    if not isinstance(args, list) or not args:
        raise SuiteError(f"{op} -> {n.get('out')}: args must be a non-empty list")
    for a in args + [n.get(k) for k in ("weight", "bias") if n.get(k) is not None]:
        if a not in values:
            raise SuiteError(f"{op} -> {n['out']}: operand '{a}' is not defined before it")
    attrs = n.get("attrs") or {}
    what = f"{op} -> {n['out']}"
    t = [values[a] for a in args]
    arity = 2 if op in BINARY or op == "matmul" else 1
    if len(args) != arity:
        raise SuiteError(f"{what}: takes {arity} operand(s) in args, got {len(args)}")
    want = n.get("dtype")
    if want is not None and want not in DTYPE_BYTES:
        raise SuiteError(f"{what}: dtype {want!r} unknown")

    if op == "matmul":
        a, b = t
        if a["dtype"] != b["dtype"]:
            raise SuiteError(f"{what}: operands of one dtype, got {a['dtype']}, {b['dtype']}")
        if len(a["shape"]) < 2 or len(b["shape"]) < 2:
            raise SuiteError(f"{what}: operands of rank 2 or more")
        sa, sb = list(a["shape"]), list(b["shape"])
        if attrs.get("transpose_a"):
            sa[-2:] = sa[-2:][::-1]
        if attrs.get("transpose_b"):
            sb[-2:] = sb[-2:][::-1]
        if sa[-1] != sb[-2]:
            raise SuiteError(f"{what}: contraction sizes differ ({sa} x {sb} after the "
                             "transposes)")
        batch = broadcast(sa[:-2], sb[:-2])
        if batch is None:
            raise SuiteError(f"{what}: batch dimensions {sa[:-2]} and {sb[:-2]} do not "
                             "broadcast")
        shape, dtype = batch + [sa[-2], sb[-1]], want or a["dtype"]
        n["mnk"] = [sa[-2], sb[-1], sa[-1], numel(batch)]  # M, N, K, batch
        if "tf32" in attrs:
            if not isinstance(attrs["tf32"], bool):
                raise SuiteError(f"{what}: attrs.tf32 must be a boolean")
            if attrs["tf32"] and a["dtype"] != "f32":
                raise SuiteError(f"{what}: attrs.tf32 needs f32 operands, got {a['dtype']}")
    elif op in BINARY:
        a, b = t
        if a["dtype"] != b["dtype"]:
            raise SuiteError(f"{what}: operands of one dtype, got {a['dtype']}, {b['dtype']} "
                             "(cast first)")
        shape = broadcast(a["shape"], b["shape"])
        if shape is None:
            raise SuiteError(f"{what}: shapes {a['shape']} and {b['shape']} do not broadcast")
        dtype = a["dtype"]
    elif op == "cast":
        if want is None:
            raise SuiteError(f"{what}: cast needs a result dtype")
        shape, dtype = list(t[0]["shape"]), want
    elif op == "reduce":
        if attrs.get("kind") not in REDUCE_KINDS:
            raise SuiteError(f"{what}: attrs.kind must be one of {', '.join(REDUCE_KINDS)}")
        if not t[0]["shape"]:
            raise SuiteError(f"{what}: reduce needs an input of rank 1 or more")
        shape, dtype = list(t[0]["shape"][:-1]), want or t[0]["dtype"]
    else:  # unary, gelu, softmax, norms: the input's type
        shape, dtype = list(t[0]["shape"]), t[0]["dtype"]
        if want is not None and want != dtype:
            raise SuiteError(f"{what}: the result has the input's dtype {dtype}")
        if op == "gelu" and attrs.get("approximate", "none") not in ("none", "tanh"):
            raise SuiteError(f"{what}: approximate must be 'none' or 'tanh'")
        if op in ROW and not shape:
            raise SuiteError(f"{what}: needs an input of rank 1 or more")
        if op in ("rmsnorm", "layernorm"):
            eps = attrs.get("eps")
            if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps < 0:
                raise SuiteError(f"{what}: attrs.eps must be a number >= 0")
            for k in ("weight", "bias") if op == "layernorm" else ("weight",):
                if n.get(k) is None:
                    continue
                wt = values[n[k]]
                if wt["shape"] != shape[-1:] or wt["dtype"] != dtype:
                    raise SuiteError(f"{what}: {k} must be [{shape[-1]}] {dtype}, got "
                                     f"{wt['shape']} {wt['dtype']}")
            if op == "rmsnorm" and n.get("bias") is not None:
                raise SuiteError(f"{what}: rmsnorm has no bias")
    if op not in ("rmsnorm", "layernorm") and (n.get("weight") or n.get("bias")):
        raise SuiteError(f"{what}: only norms take weight/bias")
    n["shape"], n["dtype"] = shape, dtype
    return n


def select(suite, names):
    """The problems named (all when names is empty); unknown names raise."""
    problems = suite["problems"]
    if not names:
        return list(problems)
    by_name = {p["name"]: p for p in problems}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SuiteError(f"no such problem: {', '.join(unknown)}")
    return [by_name[n] for n in names]


def expected_supported(p):
    return (p.get("kopt") or {}).get("expect", "supported") == "supported"


# ---------------------------------------------------------------- kopt .mlir

def ttype(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def _eps(x):
    # An MLIR float literal needs a decimal point: 1.000000e-05.
    return f"{float(x):.6e}"


def mlir_op(n, values):
    """The kopt op of one node, as docs/ops.md writes it."""
    op, out, attrs = n["op"], n["out"], n.get("attrs") or {}
    ty = {k: ttype(v["shape"], v["dtype"]) for k, v in values.items()}
    res = ttype(n["shape"], n["dtype"])
    a = n["args"]
    if op == "matmul":
        flags = [f for f in ("transpose_a", "transpose_b", "tf32") if attrs.get(f)]
        fl = (" {" + ", ".join(flags) + "}") if flags else ""
        return f"%{out} = kopt.matmul %{a[0]}, %{a[1]}{fl} : {ty[a[0]]}, {ty[a[1]]} -> {res}"
    if op in BINARY:
        return f"%{out} = kopt.{op} %{a[0]}, %{a[1]} : {ty[a[0]]}, {ty[a[1]]} -> {res}"
    if op in UNARY or op == "softmax":
        return f"%{out} = kopt.{op} %{a[0]} : {res}"
    if op == "gelu":
        return f"%{out} = kopt.gelu %{a[0]} approximate({attrs.get('approximate', 'none')}) : {res}"
    if op == "cast":
        return f"%{out} = kopt.cast %{a[0]} : {ty[a[0]]} to {res}"
    if op == "reduce":
        return f"%{out} = kopt.reduce {attrs['kind']} %{a[0]} : {ty[a[0]]} -> {res}"
    parts = [f"%{out} = kopt.{op} %{a[0]}"]
    if n.get("weight"):
        parts.append(f"weight(%{n['weight']} : {ty[n['weight']]})")
    if op == "layernorm" and n.get("bias"):
        parts.append(f"bias(%{n['bias']} : {ty[n['bias']]})")
    parts.append(f"eps = {_eps(attrs['eps'])} : {res}")
    return " ".join(parts)


def mlir_text(p):
    """The problem as one kopt function @<name>(inputs...) -> (outputs...)."""
    values = p["values"]
    args = ", ".join(f"%{x['name']}: {ttype(x['shape'], x['dtype'])}" for x in p["inputs"])
    outs = [ttype(values[o]["shape"], values[o]["dtype"]) for o in p["outputs"]]
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    lines = [
        f"// {p['name']}: {p['model']}",
        f"// {p['source']}",
        "// Generated by bench/gen_mlir.py from bench/suite.json; compile with",
        f"//   kopt-opt {p['name']}.mlir --kopt-to-ptx=\"output={p['name']}.ptx\" -o /dev/null",
        "",
        f"func.func @{p['name']}({args}) -> {ret} {{",
    ]
    lines += ["  " + mlir_op(n, values) for n in p["graph"]]
    lines.append("  return " + ", ".join(f"%{o}" for o in p["outputs"]) + " : " +
                 ", ".join(outs))
    lines.append("}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ PyTorch source

TORCH_DTYPE = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16"}
TORCH_BINARY = {"add": "torch.add", "sub": "torch.sub", "mul": "torch.mul",
                "div": "torch.div", "max": "torch.maximum", "min": "torch.minimum"}
TORCH_UNARY = {"exp": "torch.exp", "neg": "torch.neg", "abs": "torch.abs",
               "sqrt": "torch.sqrt", "rsqrt": "torch.rsqrt", "tanh": "torch.tanh",
               "sigmoid": "torch.sigmoid", "relu": "torch.relu", "silu": "F.silu"}


def torch_expr(n, values, reference=False):
    """The PyTorch expression of one node. Eager code computes in the operands'
    dtype and converts when the suite asks for another result dtype; with
    reference=True the expression runs on float64 tensors and conversions are left
    to the caller (which rounds every intermediate to its dtype)."""
    op, a, attrs = n["op"], n["args"], n.get("attrs") or {}
    in_dtype = values[a[0]]["dtype"]
    conv = "" if reference or n["dtype"] == in_dtype else f".to({TORCH_DTYPE[n['dtype']]})"
    if op == "matmul":
        x = a[0] + (".mT" if attrs.get("transpose_a") else "")
        y = a[1] + (".mT" if attrs.get("transpose_b") else "")
        return f"torch.matmul({x}, {y}){conv}"
    if op in BINARY:
        return f"{TORCH_BINARY[op]}({a[0]}, {a[1]})"
    if op in UNARY:
        return f"{TORCH_UNARY[op]}({a[0]})"
    if op == "gelu":
        return f"F.gelu({a[0]}, approximate={attrs.get('approximate', 'none')!r})"
    if op == "cast":
        return a[0] if reference else f"{a[0]}.to({TORCH_DTYPE[n['dtype']]})"
    if op == "reduce":
        method = {"sum": "sum", "max": "amax", "mean": "mean"}[attrs["kind"]]
        return f"{a[0]}.{method}(dim=-1){conv}"
    if op == "softmax":
        return f"torch.softmax({a[0]}, dim=-1)"
    nlast = n["shape"][-1]
    w = n.get("weight") or "None"
    if op == "rmsnorm":
        return f"F.rms_norm({a[0]}, ({nlast},), {w}, eps={float(attrs['eps'])!r})"
    b = n.get("bias") or "None"
    return f"F.layer_norm({a[0]}, ({nlast},), {w}, {b}, eps={float(attrs['eps'])!r})"


def torch_source(p, reference=False):
    """Python source of `def forward(<inputs>)` computing the problem with PyTorch
    (needs `torch` and `F` = torch.nn.functional in its globals). Eager mode:
    what a model's code would run. Reference mode: float64 inputs, every
    intermediate rounded to its dtype with `_round(t, "bf16")` (kopt's semantics:
    each op rounds its own result), the outputs returned unrounded in float64."""
    values = p["values"]
    lines = [f"def forward({', '.join(x['name'] for x in p['inputs'])}):"]
    ret = []
    for n in p["graph"]:
        e = torch_expr(n, values, reference)
        if reference:
            lines.append(f"    {n['out']}__f64 = {e}")
            lines.append(f"    {n['out']} = _round({n['out']}__f64, {n['dtype']!r})")
        else:
            lines.append(f"    {n['out']} = {e}")
    for o in p["outputs"]:
        ret.append(f"{o}__f64" if reference else o)
    lines.append(f"    return ({', '.join(ret)},)")
    return "\n".join(lines) + "\n"


def matmul_nodes(p):
    return [n for n in p["graph"] if n["op"] == "matmul"]


# ------------------------------------------------------ FLOPs, bytes, limits

def problem_flops(p):
    """{"matmul": {dtype: FLOPs}, "vector": FLOPs, "total": FLOPs}: 2*M*N*K*batch
    per matmul (by its operands' dtype; "tf32" for a matmul that allows TF32),
    FLOPS_PER_ELEMENT / _ROW_ELEMENT for the other ops."""
    mm = {}
    vec = 0
    values = p["values"]
    for n in p["graph"]:
        if n["op"] == "matmul":
            m, nn, k, batch = n["mnk"]
            dt = values[n["args"][0]]["dtype"]
            if (n.get("attrs") or {}).get("tf32"):
                dt = "tf32"  # f32 on tensor cores: the TF32 rate is its limit
            mm[dt] = mm.get(dt, 0) + 2 * m * nn * k * batch
        elif n["op"] in FLOPS_PER_ROW_ELEMENT:
            vec += FLOPS_PER_ROW_ELEMENT[n["op"]] * numel(values[n["args"][0]]["shape"])
        else:
            vec += FLOPS_PER_ELEMENT[n["op"]] * numel(n["shape"])
    return {"matmul": mm, "vector": vec, "total": sum(mm.values()) + vec}


def problem_bytes(p):
    """The minimal DRAM traffic: every input read once, every output written once
    (intermediates stay on chip in the ideal fused kernel)."""
    values = p["values"]
    b = sum(numel(x["shape"]) * DTYPE_BYTES[x["dtype"]] for x in p["inputs"])
    b += sum(numel(values[o]["shape"]) * DTYPE_BYTES[values[o]["dtype"]]
             for o in p["outputs"])
    return b


def sol_time_s(flops, nbytes, limits):
    """Roofline time: max(compute time, memory time). The compute time adds each
    dtype's matmul FLOPs over that dtype's matmul rate and the other FLOPs over the
    vector (CUDA-core FP32) rate. Returns (seconds, "compute" | "memory")."""
    t_c = sum(f / limits["matmul_flops"][dt] for dt, f in flops["matmul"].items())
    t_c += flops["vector"] / limits["vector_flops"]
    t_m = nbytes / limits["hbm_bytes_per_s"]
    return (t_c, "compute") if t_c >= t_m else (t_m, "memory")


def sol_score(t_k, t_b, t_sol):
    """SOL-ExecBench's score S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)): 0.5 when
    the kernel takes the baseline's time, 1 at the roofline, towards 0 when slower.
    None when a time is missing or the baseline is not slower than T_SOL (the
    score is then undefined)."""
    if t_k is None or t_b is None or t_sol is None or t_b <= t_sol or t_k <= 0:
        return None
    return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol))


def uses_tf32(p):
    """Whether problem p allows TF32: a sweep problem with "tf32": true, or a suite
    problem with a matmul whose attrs have "tf32": true."""
    if p.get("tf32") is True:
        return True
    return any((n.get("attrs") or {}).get("tf32") is True
               for n in p.get("graph") or [] if n.get("op") == "matmul")


def tolerance(p, dtype):
    """The relative L2 error allowed for an output of `dtype`: the problem's own
    "tolerance" when it has one, else TOLERANCE[dtype], at least TF32_TOLERANCE in a
    problem that allows TF32."""
    tol = p.get("tolerance")
    if isinstance(tol, (int, float)):
        return float(tol)
    if isinstance(tol, dict) and dtype in tol:
        return float(tol[dtype])
    if uses_tf32(p):
        return max(TOLERANCE[dtype], TF32_TOLERANCE)
    return TOLERANCE[dtype]


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ------------------------------------------------------ per-problem figures

PEERS = ("eager", "compile", "compile_max_autotune", "cublas")
PEER_TITLES = {"eager": "PyTorch eager", "compile": "torch.compile",
               "compile_max_autotune": "torch.compile max-autotune", "cublas": "cuBLAS"}


def derive(rec, limits):
    """Adds the derived figures to one problem's record (in place) from its raw
    times: FLOPs, bytes, T_SOL (datasheet and measured limits), achieved rates,
    fractions of the limits, speedups, SOL scores. `limits` is the record's
    "limits" ({"datasheet": ..., "measured": ... or None})."""
    p = rec["problem"]
    flops, nbytes = problem_flops(p), problem_bytes(p)
    rec["flops"], rec["bytes"] = flops, nbytes
    sol = {}
    for which in ("datasheet", "measured"):
        lim = limits.get(which)
        if not lim:
            sol[which] = None
            continue
        t, bound = sol_time_s(flops, nbytes, lim)
        sol[which] = {"t_sol_ms": t * 1e3, "bound": bound}
    rec["sol"] = sol

    def times(impl):
        t = (impl or {}).get("time") or {}
        return t.get("median_ms")

    kopt = rec.get("kopt") or {}
    t_k = times(kopt) if kopt.get("status") == "ok" else None
    peers = rec.get("peers") or {}
    rec["speedup"] = {}
    for name, peer in peers.items():
        t_p = times(peer)
        rec["speedup"][name] = (t_p / t_k) if (t_k and t_p) else None

    def rates(t_ms):
        if not t_ms:
            return None
        s = t_ms * 1e-3
        r = {"tflops": flops["total"] / s / 1e12, "gbps": nbytes / s / 1e9}
        mm_dtypes = list(flops["matmul"])
        for which in ("datasheet", "measured"):
            lim = limits.get(which)
            if not lim:
                continue
            peak_flops = None
            if mm_dtypes:
                # The problem's matmul dtype decides the compute limit (mixed: the
                # FLOP-weighted harmonic combination, i.e. the compute time).
                t_c = sum(f / lim["matmul_flops"][dt] for dt, f in flops["matmul"].items())
                peak_flops = sum(flops["matmul"].values()) / t_c
            r[f"frac_flops_{which}"] = (
                sum(flops["matmul"].values()) / s / peak_flops if peak_flops else None)
            r[f"frac_bw_{which}"] = nbytes / s / lim["hbm_bytes_per_s"]
            if sol.get(which):
                r[f"frac_sol_{which}"] = sol[which]["t_sol_ms"] / t_ms
        return r

    if t_k:
        kopt["rates"] = rates(t_k)
    for peer in peers.values():
        if times(peer):
            peer["rates"] = rates(times(peer))
    t_b = times(peers.get("eager"))
    rec["sol_score"] = {
        which: (sol_score(t_k, t_b, sol[which]["t_sol_ms"]) if sol.get(which) else None)
        for which in ("datasheet", "measured")
    }
    return rec


def aggregate(records, peers=PEERS):
    """Suite-level figures: geomean speedup of kopt over each peer (problems where
    both have a time), problems faster than eager, median SOL score."""
    status = {}
    for r in records:
        s = (r.get("kopt") or {}).get("status", "missing")
        status[s] = status.get(s, 0) + 1
    ok = [r for r in records if (r.get("kopt") or {}).get("status") == "ok"]
    agg = {"problems": len(records), "kopt_status": status, "kopt_ok": len(ok)}
    agg["geomean_speedup"] = {}
    for peer in peers:
        xs = [r["speedup"].get(peer) for r in ok if r.get("speedup", {}).get(peer)]
        if xs:
            agg["geomean_speedup"][peer] = {"value": geomean(xs), "problems": len(xs)}
    with_eager = [r for r in ok if r.get("speedup", {}).get("eager")]
    faster = sum(1 for r in with_eager if r["speedup"]["eager"] > 1.0)
    agg["faster_than_eager"] = {
        "count": faster,
        "of_measured": len(with_eager),
        "of_suite": len(records),
        "fraction_of_measured": faster / len(with_eager) if with_eager else None,
        "fraction_of_suite": faster / len(records) if records else None,
    }
    for which in ("datasheet", "measured"):
        scores = [(r.get("sol_score") or {}).get(which) for r in ok]
        scores = [s for s in scores if s is not None]
        # Over the whole suite, a problem kopt did not run correctly scores 0.
        all_scores = scores + [0.0] * (len(records) - len(ok))
        agg[f"median_sol_score_{which}"] = {
            "value": median(scores), "problems": len(scores),
            "value_failures_as_0": median(all_scores) if scores else None,
        }
    return agg


# ======================================================================= the kopt package

def import_kopt():
    """The kopt Python package (python/kopt, over libkopt.so): the one on the path
    (PYTHONPATH=<bundle>/python, or an installed wheel), else this source tree's
    python/ folder (whose package finds build/lib/libkopt.so). Raises SuiteError
    saying how to get it."""
    try:
        import kopt
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "python"))
        try:
            import kopt
        except ImportError as e:
            raise SuiteError(f"the kopt Python package is missing ({e}): set "
                             "PYTHONPATH=<bundle>/python or pip install it "
                             "(docs/python.md)") from None
    return kopt


def kernel_ops(kernel):
    """The op kinds of a manifest (version 2) kernel's `ops`, in order."""
    ops = kernel.get("ops") if isinstance(kernel, dict) else None
    if not isinstance(ops, list):
        return []
    return [o.get("op") for o in ops if isinstance(o, dict)]


def kernel_op_name(kernel):
    """"matmul", or a chain's kinds joined by '+' (as KernelSpec::opsName)."""
    return "+".join(str(k) for k in kernel_ops(kernel))
