"""The schedule sweep's index (bench/compile_sweep.py's DIR/index.json) and its checks:
the index's structure, each problem normalized, the selection of --only, the
operand shapes, each kernel's manifest and PTX checked (kopt's C++ reader through
the package, then the sweep's own checks), the kernels' order, a problem's seed,
FLOPs and tolerance; and bench/run_sweep.py's log."""
import fnmatch
import json
import os
import re
import zlib

import kopt_suite as ks

SWEEP_VERSION = 1
DTYPES = ("f32", "f16", "bf16")
KNOWN_TAGS = ("sweep", "default", "split_k", "persistent", "tf32", "random", "random_valid",
              "decode", "tma", "gemv", "epilogue", "simt_stages", "warp_specialize",
              "tma_store")
ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
ENTRY_RE = re.compile(r"\.entry\s+(\w+)\s*\(")
MAX_DYNAMIC_SHARED = 227 * 1024   # sm_90 opt-in limit per block

_LOG = {"file": None}


def log(msg):
    line = f"run_sweep: {msg}"
    print(line, flush=True)
    if _LOG["file"]:
        _LOG["file"].write(line + "\n")
        _LOG["file"].flush()


class SweepError(Exception):
    pass


def _pos_int(x):
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _rel_path_ok(path):
    return (isinstance(path, str) and path and not os.path.isabs(path) and
            ".." not in path.replace("\\", "/").split("/"))


def check_index(index):
    """Structural errors of an index.json (a list of strings; empty when fine)."""
    if not isinstance(index, dict):
        return ["index.json is not a JSON object"]
    errs = []
    if index.get("kopt_sweep_version") != SWEEP_VERSION:
        errs.append(f"kopt_sweep_version is {index.get('kopt_sweep_version')!r}, "
                    f"not {SWEEP_VERSION}")
    problems = index.get("problems")
    if not isinstance(problems, list) or not problems:
        errs.append("no problems")
        return errs
    seen = set()
    for i, p in enumerate(problems):
        where = f"problems[{i}]"
        if not isinstance(p, dict):
            errs.append(f"{where}: not an object")
            continue
        pid = p.get("id")
        if not isinstance(pid, str) or not ID_RE.match(pid):
            errs.append(f"{where}: bad id {pid!r}")
        else:
            where = f"problem {pid}"
            if pid in seen:
                errs.append(f"{where}: duplicate id")
            seen.add(pid)
        for key in ("m", "n", "k"):
            if not _pos_int(p.get(key)):
                errs.append(f"{where}: {key} must be a positive integer, got {p.get(key)!r}")
        for key in ("dtype", "out_dtype"):
            if p.get(key) not in DTYPES:
                errs.append(f"{where}: {key} must be one of {', '.join(DTYPES)}, "
                            f"got {p.get(key)!r}")
        for key in ("transpose_a", "transpose_b", "tf32"):
            if not isinstance(p.get(key, False), bool):
                errs.append(f"{where}: {key} must be a boolean")
        if p.get("tf32") is True and p.get("dtype") != "f32":
            errs.append(f"{where}: tf32 needs f32 operands, got {p.get('dtype')!r}")
        tol = p.get("tolerance")
        if tol is not None and not (isinstance(tol, (int, float)) or isinstance(tol, dict)):
            errs.append(f"{where}: tolerance must be a number or {{dtype: number}}")
        kernels = p.get("kernels")
        if not isinstance(kernels, list):
            errs.append(f"{where}: kernels must be a list")
            continue
        for j, kern in enumerate(kernels):
            kw = f"{where}, kernels[{j}]"
            if not isinstance(kern, dict):
                errs.append(f"{kw}: not an object")
                continue
            for key in ("file", "manifest"):
                if not _rel_path_ok(kern.get(key)):
                    errs.append(f"{kw}: {key} must be a relative path inside the folder, "
                                f"got {kern.get(key)!r}")
            if not isinstance(kern.get("schedule", {}), dict):
                errs.append(f"{kw}: schedule must be an object")
            tags = kern.get("tags", [])
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                errs.append(f"{kw}: tags must be a list of strings")
    return errs


def normalize_problem(p):
    """The problem with its optional fields filled in (transposes and tf32 default
    to false)."""
    q = dict(p)
    q["transpose_a"] = bool(p.get("transpose_a", False))
    q["transpose_b"] = bool(p.get("transpose_b", False))
    q["tf32"] = bool(p.get("tf32", False))
    q["kernels"] = [dict(k, tags=list(k.get("tags", [])), schedule=k.get("schedule") or {})
                    for k in p["kernels"]]
    return q


def load_index(sweep_dir):
    """DIR/index.json, checked; its problems normalized. Raises SweepError."""
    path = os.path.join(sweep_dir, "index.json")
    try:
        with open(path) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        raise SweepError(f"{path}: {e} (run bench/compile_sweep.py --out DIR first)")
    errs = check_index(index)
    if errs:
        more = f" (and {len(errs) - 10} more)" if len(errs) > 10 else ""
        raise SweepError(f"{path}: " + "; ".join(errs[:10]) + more)
    index = dict(index)
    index["problems"] = [normalize_problem(p) for p in index["problems"]]
    return index


def select(problems, only):
    """The problems whose id matches one of `only` (ids or shell patterns, e.g.
    'random_*'; a comma-separated list is split); all when `only` is empty. A
    pattern that matches nothing is an error."""
    pats = [x for o in only for x in o.split(",") if x]
    if not pats:
        return list(problems)
    unmatched = [x for x in pats if not any(fnmatch.fnmatchcase(p["id"], x) for p in problems)]
    if unmatched:
        raise SweepError(f"no such problem: {', '.join(unmatched)}")
    return [p for p in problems if any(fnmatch.fnmatchcase(p["id"], x) for x in pats)]


def operand_shapes(p):
    """Shapes of a, b (as stored: [k, m] / [n, k] when transposed) and of the result."""
    m, n, k = p["m"], p["n"], p["k"]
    a = [k, m] if p["transpose_a"] else [m, k]
    b = [n, k] if p["transpose_b"] else [k, n]
    return a, b, [m, n]


def check_kernel_manifest(p, kentry, manifest, ptx_text):
    """(error or None, warnings) for one kernel of problem p: the manifest is valid
    (kopt.validate_manifest: the C++ reader's checks, tensor maps included), holds
    one matmul kernel whose parameters are a, b, result with the problem's dtypes
    and shapes (and a split-K workspace), its dynamic shared memory fits an sm_90
    block and it is an .entry of the PTX."""
    warnings = []
    # The manifest itself (fields, tensor maps, grid and block limits, launches): kopt's
    # C++ reader, through the package, as kopt.load checks it (no GPU needed).
    kopt = ks.import_kopt()
    try:
        kopt.validate_manifest(manifest, name=kentry.get("manifest"))
    except kopt.KoptError as e:
        return str(e), warnings
    kernels = manifest.get("kernels")
    if not isinstance(kernels, list) or len(kernels) != 1:
        n = len(kernels) if isinstance(kernels, list) else 0
        return f"the manifest has {n} kernels, not 1", warnings
    k = kernels[0]
    if not isinstance(k, dict) or not isinstance(k.get("name"), str):
        return "the kernel has no name", warnings
    name = k["name"]
    ops = k.get("ops") if isinstance(k.get("ops"), list) else []
    kinds = "+".join(str(o.get("op")) for o in ops if isinstance(o, dict))
    if k.get("class", "matmul") != "matmul" or kinds != "matmul":
        return f"{name} is a {k.get('class')} kernel computing {kinds}, not a matmul", \
            warnings
    attrs = ops[0].get("attrs") or {}
    for key in ("transpose_a", "transpose_b", "tf32"):
        if bool(attrs.get(key, False)) != bool(p.get(key, False)):
            return f"{name}: {key} is {bool(attrs.get(key, False))}, the problem's " \
                   f"{bool(p.get(key, False))}", warnings
    a, b, c = operand_shapes(p)
    want = [("a", "input", p["dtype"], a), ("b", "input", p["dtype"], b),
            ("result", "output", p["out_dtype"], c)]
    params = k.get("params")
    # A split-K kernel takes a 4th parameter: its f32 workspace.
    if isinstance(params, list) and len(params) == 4:
        ws = params[3]
        if not (isinstance(ws, dict) and ws.get("name") == "workspace"
                and ws.get("role") == "workspace" and ws.get("dtype") == "f32"
                and isinstance(ws.get("shape"), list) and len(ws["shape"]) == 1
                and _pos_int(ws["shape"][0])):
            return f"{name}: parameter 4 must be a 1-D f32 workspace, got {ws!r}", warnings
        params = params[:3]
    if not isinstance(params, list) or len(params) != 3:
        n = len(params) if isinstance(params, list) else 0
        return f"{name} has {n} parameters, not 3 (a, b, result) or 4 (and a workspace)", \
            warnings
    for got, (pname, role, dtype, shape) in zip(params, want):
        have = (got.get("name"), got.get("role"), got.get("dtype"), got.get("shape")) \
            if isinstance(got, dict) else (None,) * 4
        if have != (pname, role, dtype, shape):
            return (f"{name}: parameter {have[0]} is {have[1]} {have[2]} {have[3]}, "
                    f"expected {pname} {role} {dtype} {shape}"), warnings
    smem = k.get("dynamic_shared_bytes", 0)
    if not isinstance(smem, int) or isinstance(smem, bool) or not \
            0 <= smem <= MAX_DYNAMIC_SHARED:
        return f"{name}: dynamic_shared_bytes {smem!r} is not within 0..{MAX_DYNAMIC_SHARED}", \
            warnings
    if name not in set(ENTRY_RE.findall(ptx_text)):
        return f"{name} is not an .entry of {kentry['file']}", warnings
    ms = k.get("schedule")
    if isinstance(ms, dict) and kentry.get("schedule"):
        diff = sorted(key for key in set(ms) & set(kentry["schedule"])
                      if ms[key] != kentry["schedule"][key])
        if diff:
            return ("the manifest's schedule differs from the index's in " +
                    ", ".join(f"{x} ({ms[x]!r} vs {kentry['schedule'][x]!r})" for x in diff)), \
                warnings
    mptx = manifest.get("ptx")
    if isinstance(mptx, str) and os.path.basename(mptx) != os.path.basename(kentry["file"]):
        warnings.append(f"the manifest names {mptx}, the index {kentry['file']} (used)")
    unknown = [t for t in kentry.get("tags", []) if t not in KNOWN_TAGS]
    if unknown:
        warnings.append(f"unknown tags {', '.join(unknown)}")
    return None, warnings


def check_kernel(sweep_dir, p, kentry):
    """Reads the kernel's manifest and PTX and checks them: (error, warnings, the
    manifest's kernel or None)."""
    try:
        with open(os.path.join(sweep_dir, kentry["manifest"])) as f:
            manifest = json.load(f)
        with open(os.path.join(sweep_dir, kentry["file"]), errors="replace") as f:
            ptx = f.read()
    except (OSError, ValueError) as e:
        return f"{type(e).__name__}: {e}", [], None
    err, warnings = check_kernel_manifest(p, kentry, manifest, ptx)
    return err, warnings, (None if err else manifest["kernels"][0])


def kernel_order(p):
    """Indices of p's kernels in the order they run: "default"-tagged first (so that
    a deadline cuts sweep points, not the default), then the index's order."""
    idx = list(range(len(p["kernels"])))
    return sorted(idx, key=lambda i: 0 if "default" in p["kernels"][i]["tags"] else 1)


def problem_seed(seed, pid):
    return (seed + zlib.crc32(pid.encode())) % (1 << 62)


def problem_flops(p):
    return 2 * p["m"] * p["n"] * p["k"]


def problem_tolerance(p):
    """The dtype's tolerance of p's result (kopt_suite.TOLERANCE). A problem with
    "tf32": true gets at least kopt_suite.TF32_TOLERANCE, f16's: its reference is the
    float64 product of the f32 inputs, while a TF32 kernel (and cuBLAS with
    allow_tf32) cuts every operand to a 10-bit mantissa first, f16's precision, so
    it is off by what rounding the inputs to f16 costs (a few 1e-4), not f32's 1e-5."""
    return ks.tolerance(p, p["out_dtype"])
