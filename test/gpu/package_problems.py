"""The problems of test/gpu/test_package.py, and their compilation for a GPU host
whose libkopt is runtime-only:

    KOPT_LIBRARY=build/lib/libkopt.so python3 test/gpu/package_problems.py OUT_DIR

writes OUT_DIR/NAME.{ptx,json} for every problem (then KOPT_PKG_PTX_DIR=OUT_DIR).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MM_TMA = """
func.func @mm(%a: tensor<1000x512xbf16>, %b: tensor<768x512xbf16>) -> tensor<1000x768xbf16> {
  %c = kopt.matmul %a, %b {transpose_b} : tensor<1000x512xbf16>, tensor<768x512xbf16> -> tensor<1000x768xbf16>
  return %c : tensor<1000x768xbf16>
}
"""
MM_SPLITK = """
func.func @mm(%a: tensor<33x4096xbf16>, %b: tensor<1024x4096xbf16>) -> tensor<33x1024xbf16> {
  %c = kopt.matmul %a, %b {transpose_b} : tensor<33x4096xbf16>, tensor<1024x4096xbf16> -> tensor<33x1024xbf16>
  return %c : tensor<33x1024xbf16>
}
"""
MLP = (ROOT / "examples" / "llama_mlp_block.mlir").read_text()
SOFTMAX = """
func.func @sm(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %y = kopt.softmax %x : tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}
"""

PROBLEMS = {
    "mm_tma": (MM_TMA, {"copy": "tma", "vector_width": 8, "tma_store": True}),
    "mm_tma_persistent": (MM_TMA, {"copy": "tma", "vector_width": 8,
                                   "persistent": True, "warp_specialize": True}),
    "mm_splitk": (MM_SPLITK, {"copy": "tma", "split_k": 4, "vector_width": 8}),
    "mlp_block": (MLP, None),
    "softmax": (SOFTMAX, None),
}




def prepare(out_dir):
    sys.path.insert(0, str(ROOT / "python"))
    import kopt
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, (text, schedule) in PROBLEMS.items():
        kopt.compile(text, schedule=schedule, name=name).write(out / f"{name}.ptx")
        print(f"wrote {out / name}.ptx")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: package_problems.py OUT_DIR")
    prepare(sys.argv[1])
