#!/usr/bin/env python3
"""Writes a large kopt module for measuring compile time against module size.

    bench/gen_big_module.py --ops N [--ops-per-func K] [--matmul-every M] > big.mlir
    kopt-opt big.mlir --kopt-to-ptx="output=big.ptx" -o /dev/null

The module has ceil(N / K) functions of K ops each (the last one shorter). Each
function is a chain over tensor<64x256xbf16> that cycles through elementwise ops
(add of a broadcast bias row, exp, silu, mul) and row ops (rmsnorm with a weight,
softmax) and, every M-th op when M > 0, a matmul with a 256x256 Linear weight,
so every op is live; each becomes one kernel with kopt-fuse's fuse=false, else
add + exp and silu + mul are fused kernels (4 kernels per 6 ops without
matmuls). Compile time per op should not depend on N (bench/notes.md, "Compile time").
"""
import argparse
import sys

T = "tensor<64x256xbf16>"
ROW = "tensor<256xbf16>"
W = "tensor<256x256xbf16>"


def op_text(i, x, matmul_every):
    """The i-th op of a chain on value `x`: (text, uses bias/weight/linear)."""
    y = f"%v{i}"
    if matmul_every and i % matmul_every == matmul_every - 1:
        return (f"  {y} = kopt.matmul {x}, %w {{transpose_b}} : {T}, {W} -> {T}", y)
    kind = i % 6
    if kind == 0:
        return (f"  {y} = kopt.add {x}, %bias : {T}, {ROW} -> {T}", y)
    if kind == 1:
        return (f"  {y} = kopt.exp {x} : {T}", y)
    if kind == 2:
        return (f"  {y} = kopt.rmsnorm {x} weight(%g : {ROW}) eps = 1.0e-05 : {T}", y)
    if kind == 3:
        return (f"  {y} = kopt.silu {x} : {T}", y)
    if kind == 4:
        return (f"  {y} = kopt.mul {x}, {x} : {T}, {T} -> {T}", y)
    return (f"  {y} = kopt.softmax {x} : {T}", y)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, required=True, help="kopt ops in all")
    p.add_argument("--ops-per-func", type=int, default=100,
                   help="ops per function (default: 100)")
    p.add_argument("--matmul-every", type=int, default=0,
                   help="every M-th op is a matmul (default: 0, none)")
    a = p.parse_args()
    if a.ops < 1 or a.ops_per_func < 1 or a.matmul_every < 0:
        p.error("--ops and --ops-per-func must be at least 1, --matmul-every >= 0")
    out = sys.stdout
    done = 0
    f = 0
    while done < a.ops:
        n = min(a.ops_per_func, a.ops - done)
        out.write(f"func.func @f{f}(%x: {T}, %bias: {ROW}, %g: {ROW}, %w: {W}) -> {T} {{\n")
        x = "%x"
        for i in range(n):
            text, x = op_text(i, x, a.matmul_every)
            out.write(text + "\n")
        out.write(f"  return {x} : {T}\n}}\n")
        done += n
        f += 1


if __name__ == "__main__":
    main()
