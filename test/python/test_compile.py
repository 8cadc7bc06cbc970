"""kopt.compile through the C API: the same PTX and manifest as kopt-opt, and
clear exceptions for bad input."""

import concurrent.futures
import json
import os
import subprocess
from pathlib import Path

import pytest

import kopt

SOFTMAX = """
func.func @forward(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %y = kopt.softmax %x : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
"""


def test_version():
    assert kopt.version().startswith("kopt ")


@pytest.mark.parametrize("example", ["vocab_softmax", "llama_mlp_block",
                                     "unaligned_gemm", "bert_large_gelu"])
def test_same_output_as_kopt_opt(example, root, kopt_opt, tmp_path):
    src = root / "examples" / f"{example}.mlir"
    compiled = kopt.compile(src)
    (tmp_path / "py").mkdir()
    manifest = compiled.write(tmp_path / "py" / f"{example}.ptx")
    ref = tmp_path / "ref" / f"{example}.ptx"
    ref.parent.mkdir()
    subprocess.run([kopt_opt, str(src), f"--kopt-to-ptx=output={ref}", "-o",
                    "/dev/null"], check=True)
    assert (tmp_path / "py" / f"{example}.ptx").read_bytes() == ref.read_bytes()
    assert manifest.read_bytes() == ref.with_suffix(".json").read_bytes()
    assert compiled.manifest["kernels"], "a kernel at least"
    assert set(compiled.functions) == {f["name"] for f in
                                        json.loads(manifest.read_text())["functions"]}


def test_text_bytes_and_path_agree(root):
    src = root / "examples" / "vocab_softmax.mlir"
    a = kopt.compile(src)
    b = kopt.compile(src.read_text())
    c = kopt.compile(src.read_bytes())
    d = kopt.compile(str(src))
    assert a.ptx == b.ptx == c.ptx == d.ptx
    assert a.kernels == b.kernels


def test_ptx_assembles(tmp_path):
    import os
    ptxas = os.environ.get("KOPT_PTXAS")
    if not ptxas:
        pytest.skip("no ptxas")
    compiled = kopt.compile(SOFTMAX)
    compiled.write(tmp_path / "s.ptx")
    subprocess.run([ptxas, "-arch=sm_90a", str(tmp_path / "s.ptx"), "-o",
                    str(tmp_path / "s.cubin")], check=True)


def test_parse_error_has_location():
    with pytest.raises(kopt.CompileError) as e:
        kopt.compile("func.func @f() {\n  %0 = kopt.nonsense\n}\n", name="bad.mlir")
    assert "bad.mlir:2:" in str(e.value)


def test_verifier_error_has_location():
    bad = SOFTMAX.replace("%y = kopt.softmax %x : tensor<64x1024xf32>",
                          "%y = kopt.matmul %x, %x : (tensor<64x1024xf32>, "
                          "tensor<64x1024xf32>) -> tensor<64x64xf32>")
    with pytest.raises(kopt.CompileError) as e:
        kopt.compile(bad, name="mm.mlir")
    assert "mm.mlir:3:" in str(e.value)


def test_nothing_to_compile():
    with pytest.raises(kopt.CompileError, match="nothing to compile"):
        kopt.compile("module {}")


def test_invalid_utf8_is_an_error_not_a_crash():
    with pytest.raises(kopt.CompileError):
        kopt.compile(b"func.func @f\xff() {\n  return\n}\n")


def test_bad_arguments():
    with pytest.raises(TypeError):
        kopt.compile(42)
    with pytest.raises(kopt.KoptError, match="no such file"):
        kopt.compile("/nonexistent/model.mlir")
    with pytest.raises(ValueError):
        kopt.compile(SOFTMAX, opt_level=7)
    with pytest.raises(kopt.CompileError, match="sm_10"):
        kopt.compile(SOFTMAX, chip="sm_10")
    with pytest.raises(kopt.CompileError, match="/nonexistent/s.json"):
        kopt.compile(SOFTMAX, schedule="/nonexistent/s.json")
    with pytest.raises(TypeError, match="chip must be a str, not int"):
        kopt.compile(SOFTMAX, chip=5)
    with pytest.raises(TypeError, match="schedule must be a path or a dict"):
        kopt.compile(SOFTMAX, schedule=[{"stages": 3}])
    with pytest.raises(TypeError, match="fusion_plan must be a path or a dict"):
        kopt.compile(SOFTMAX, fusion_plan=["split"])


def test_write_refuses_json_path(tmp_path):
    compiled = kopt.compile(SOFTMAX)
    with pytest.raises(kopt.KoptError, match="must not end in .json"):
        compiled.write(tmp_path / "x.json")


def test_concurrent_compiles_match_sequential(root):
    sources = [root / "examples" / f"{n}.mlir" for n in
               ("vocab_softmax", "llama_rmsnorm", "cast", "residual_bias_add")]
    sequential = [kopt.compile(s).ptx for s in sources]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda s: kopt.compile(s).ptx, sources * 2))
    assert parallel == sequential * 2


def test_validate_manifest_without_a_gpu(root, tmp_path):
    compiled = kopt.compile(SOFTMAX)
    kopt.validate_manifest(compiled.manifest_json)
    kopt.validate_manifest(compiled.manifest)
    path = compiled.write(tmp_path / "s.ptx")
    kopt.validate_manifest(path)
    bad = json.loads(compiled.manifest_json)
    bad["kernels"][0]["block"] = [4096, 1, 1]
    with pytest.raises(kopt.LaunchError, match=r"^b\.json: kernels\[0\] \(softmax_0\)"
                       r"\.block\[0\]: value 4096 out of range"):
        kopt.validate_manifest(bad, name="b.json")
    # The TMA rules of the C++ reader, on the fake driver's TMA manifest.
    tma = json.loads((root / "test" / "unit" / "Inputs" / "fake" / "tma.json").read_text())
    kopt.validate_manifest(tma)
    tma["kernels"][0]["tensor_maps"][1]["swizzle"] = 96
    with pytest.raises(kopt.LaunchError, match=r"^<manifest>: kernels\[0\] \(matmul_tma_bf16\)"
                       r"\.tensor_maps\[1\]\.swizzle: 96 is not"):
        kopt.validate_manifest(tma)
    with pytest.raises(kopt.LaunchError, match="invalid JSON"):
        kopt.validate_manifest("{")
    with pytest.raises(kopt.LaunchError, match="cannot read manifest"):
        kopt.validate_manifest(tmp_path / "missing.json")
    with pytest.raises(TypeError):
        kopt.validate_manifest(3)


def test_deep_nesting_is_an_error_not_a_stack_overflow():
    # MLIR's parser recurses per level: 5000 levels overflowed the caller's
    # 8 MiB stack before compiles ran on their own 256 MiB thread.
    with pytest.raises(kopt.CompileError, match="nothing to compile"):
        kopt.compile("module {" * 5000 + "}" * 5000)
    with pytest.raises(kopt.CompileError, match="nested 20000 deep"):
        kopt.compile("module {" * 20000 + "}" * 20000)


def test_schedule_argument_and_paths(tmp_path):
    with pytest.raises(ValueError, match="not plain JSON"):
        kopt.compile(SOFTMAX, schedule={"stages": float("nan")})
    with pytest.raises(kopt.CompileError, match="kopt-schedule-argument-"):
        kopt.compile(SOFTMAX, schedule={"bogus": 1})
    d = tmp_path / "d.mlir"
    d.mkdir()
    with pytest.raises(kopt.KoptError, match="is a directory"):
        kopt.compile(str(d))


CHAIN = """
func.func @softcap(%x: tensor<16x4096xf32>, %c: tensor<f32>) -> tensor<16x4096xf32> {
  %d = kopt.div %x, %c : tensor<16x4096xf32>, tensor<f32> -> tensor<16x4096xf32>
  %t = kopt.tanh %d : tensor<16x4096xf32>
  %y = kopt.mul %t, %c : tensor<16x4096xf32>, tensor<f32> -> tensor<16x4096xf32>
  return %y : tensor<16x4096xf32>
}
"""


def test_fusion_plan():
    # The default plan's fused kernel split into one kernel per op, from a dict
    # (a temporary file) and from a file; a name the plan lacks is an error
    # that lists its fused kernels.
    split = kopt.compile(CHAIN, fusion_plan={"split": ["div_tanh_mul_0"]})
    assert [k["name"] for k in split.manifest["kernels"]] == ["div_0", "tanh_0", "mul_0"]
    with pytest.raises(kopt.CompileError,
                       match="splits 'nope', which is not a fused kernel of the "
                             r"default plan \(its fused kernels: div_tanh_mul_0\)"):
        kopt.compile(CHAIN, fusion_plan={"split": ["nope"]})
    with pytest.raises(kopt.CompileError, match="cannot read the plan file"):
        kopt.compile(CHAIN, fusion_plan="/nonexistent/plan.json")


TUNED_MATMUL = """
func.func @f(%x: tensor<256x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %0 = kopt.matmul %x, %w {transpose_b} : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  return %0 : tensor<256x256xbf16>
}
"""


@pytest.mark.skipif(not os.environ.get("KOPT_TUNE"), reason="kopt-tune not built")
def test_tuning_db(tmp_path):
    # The records of the lit test select-schedule-tuning-db.mlir: the best usable
    # GPU record of 256x256x256 has block_m 128 (the heuristic's is 64).
    records = Path(__file__).parents[1] / "Transforms" / "Inputs" / "tuning-db-records.jsonl"
    db = tmp_path / "tune.db"
    subprocess.run([os.environ["KOPT_TUNE"], f"--db={db}", f"--import={records}"],
                   check=True, capture_output=True)
    tuned = kopt.compile(TUNED_MATMUL, tuning_db=db).manifest["kernels"][0]["schedule"]
    assert (tuned["instruction"], tuned["block_m"], tuned["block_n"]) == ("mma_sync", 128, 64)
    default = kopt.compile(TUNED_MATMUL).manifest["kernels"][0]["schedule"]
    assert default["block_m"] == 64 and default["instruction"] == "wgmma"
    with pytest.raises(kopt.CompileError, match="no such tuning database"):
        kopt.compile(TUNED_MATMUL, tuning_db=tmp_path / "missing.db")


def test_fuse_option():
    fused = kopt.compile(CHAIN).manifest["kernels"]
    assert [len(k["ops"]) for k in fused] == [3]
    assert [o["op"] for o in fused[0]["ops"]] == ["div", "tanh", "mul"]
    unfused = kopt.compile(CHAIN, fuse=False).manifest["kernels"]
    assert [len(k["ops"]) for k in unfused] == [1, 1, 1]
    assert kopt.compile(CHAIN, fuse=True).manifest_json == kopt.compile(
        CHAIN).manifest_json
