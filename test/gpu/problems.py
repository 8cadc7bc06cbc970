#!/usr/bin/env python3
"""The GPU test problems: every kopt op at three or more shapes, non-divisible ones
included, written as one .mlir file per problem.

    test/gpu/problems.py OUT_DIR

Each file holds one function with one op: one kernel, plus the kopt.pack kernels that
kopt-pack-operands puts in front of an f16/bf16 matmul whose operands the fast
schedules cannot read (K % 8 != 0, A stored [K, M] or B stored [K, N]). The GPU test harness
(test/gpu/run_gpu_tests.sh) runs every compiled problem with kopt-run, which checks
it against an independent reference and times it, and times PyTorch eager on the
same op and shapes. Shapes follow issue #2: matmul 1x4096x4096, 4097x4095x4093 and
64x64x1 in bf16 and f32; softmax, rmsnorm and layernorm on 4096x32000 and 7x33;
elementwise ops with a broadcast bias on 4096x14336 (Llama-3.1-8B's MLP width).
The chain_* problems (chains()) are fused elementwise chains: several ops, one kernel;
the row_* problems (row_chains()) are row kernels at the shapes of each launch plan and
row ops fused with elementwise ops.
"""
import json
import os
import sys


def ttype(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def problems():
    out = []

    def add(name, args, body_fn, result, schedule=None):
        out.append((name, args, body_fn, result, schedule))

    # matmul: (M, N, K, dtype, result dtype, transpose_a, transpose_b)
    mm = [
        (1, 4096, 4096, "bf16", "bf16", False, True),  # decode GEMV, Linear weight
        (4097, 4095, 4093, "bf16", "f32", False, False),
        (64, 64, 1, "bf16", "bf16", False, False),
        (1, 4096, 4096, "f32", "f32", False, False),
        (4097, 4095, 4093, "f32", "f32", False, True),
        (64, 64, 1, "f32", "f32", False, False),
        (33, 17, 65, "f16", "f16", True, True),
        (512, 1024, 256, "f16", "f32", True, False),
        # Packed: B made K-major (K % 8 == 0); K 4093 padded with A row-major.
        (256, 1000, 1000, "f16", "f16", False, False),
        (300, 4095, 4093, "bf16", "bf16", False, True),
    ]
    for m, n, k, dt, rt, ta, tb in mm:
        a = [k, m] if ta else [m, k]
        b = [n, k] if tb else [k, n]
        flags = [f for f, on in (("transpose_a", ta), ("transpose_b", tb)) if on]
        attr = (" {" + ", ".join(flags) + "}") if flags else ""
        name = f"matmul_{dt}_{rt}_{m}x{n}x{k}" + ("_ta" if ta else "") + ("_tb" if tb else "")
        add(name, [(a, dt), (b, dt)],
            lambda x, attr=attr, a=a, b=b, dt=dt, m=m, n=n, rt=rt:
            f"kopt.matmul {x[0]}, {x[1]}{attr} : {ttype(a, dt)}, {ttype(b, dt)} -> {ttype([m, n], rt)}",
            ([m, n], rt))

    # matmul with a schedule file (NAME.sched.json beside NAME.mlir): split-K for
    # each instruction, odd sizes, a last split shorter than the others; persistent
    # grids.
    # (M, N, K, dtype, result dtype, transpose_b, schedule)
    # A schedule that names every field of the tile: the instruction, the copy, the
    # block and warp tiles, the ring, split-K, the swizzle, the vector width, then
    # the flags (persistent, warp_specialize, tma_store) given.
    def tile(instruction, copy, bm, bn, bk, wm, wn, stages, split_k, swizzle, vw,
             **flags):
        return {"instruction": instruction, "copy": copy, "block_m": bm, "block_n": bn,
                "block_k": bk, "warp_m": wm, "warp_n": wn, "stages": stages,
                "split_k": split_k, "swizzle": swizzle, "vector_width": vw, **flags}

    def mma(copy, bm, bn, bk, wm, wn, stages, split_k, vw):
        return tile("mma_sync", copy, bm, bn, bk, wm, wn, stages, split_k, 1, vw)

    def wgmma(copy, bm, bn, bk, wm, wn, stages, split_k, swizzle, vw, **flags):
        return tile("wgmma", copy, bm, bn, bk, wm, wn, stages, split_k, swizzle, vw,
                    **flags)

    def tf32(bm, bn, wm, wn, bk, stages, vw, split_k=1, persistent=False):
        # wgmma on f32 operands: the problem's matmul gets {tf32}.
        return wgmma("tma", bm, bn, bk, wm, wn, stages, split_k,
                     8 if bm * 8 <= 4096 else 1, vw, persistent=persistent)

    def gemv(bm, bn, wn, bk, split_k=1):
        return {"instruction": "gemv", "copy": "sync", "stages": 1, "block_m": bm,
                "warp_m": bm, "block_n": bn, "warp_n": wn, "block_k": bk,
                "split_k": split_k, "swizzle": 1, "vector_width": 1}

    split = [
        (32, 4096, 14336, "bf16", "bf16", True, {"split_k": 4}),
        (5, 1000, 1000, "bf16", "bf16", True,
         wgmma("cp_async", 64, 64, 64, 64, 64, 4, 16, 1, 2)),
        (33, 17, 700, "f16", "f32", True, mma("sync", 64, 32, 32, 64, 8, 1, 8, 1)),
        (8, 4096, 4096, "f32", "f32", True, {"split_k": 16}),
        (300, 200, 1000, "f32", "f32", False, {"split_k": 4}),
        # Persistent wgmma grids: tiles walked in rasterization order, the copy
        # pipeline running across tiles; partial tiles, more tiles than blocks.
        (4097, 4095, 4096, "bf16", "f32", True, {"persistent": True}),
        (300, 1000, 1000, "bf16", "bf16", True, {"persistent": True}),
        (2048, 2056, 520, "f16", "f16", True,
         wgmma("cp_async", 128, 128, 64, 64, 128, 4, 1, 4, 2, persistent=True)),
        # Staged epilogues (vector_width > 2 on tensor cores): the block tile
        # through shared memory, 16-byte stores; partial tiles, f32 C, a
        # persistent grid, split-K, mma_sync with and without cp.async.
        (4096, 4096, 4096, "bf16", "bf16", True, {"vector_width": 8, "copy": "cp_async"}),
        (4097, 4088, 4096, "bf16", "bf16", True, {"vector_width": 8, "copy": "cp_async"}),
        (100, 1000, 4096, "f16", "f16", True, {"vector_width": 8}),
        (300, 1000, 1000, "bf16", "f32", True, {"vector_width": 4}),
        (2048, 2056, 520, "bf16", "bf16", True,
         {"vector_width": 8, "persistent": True, "stages": 3, "copy": "cp_async"}),
        (33, 4096, 14336, "bf16", "bf16", True, {"vector_width": 8, "split_k": 4}),
        (257, 264, 96, "f16", "f16", True,
         mma("cp_async", 128, 128, 32, 64, 32, 2, 1, 8)),
        (129, 136, 100, "bf16", "bf16", False, mma("sync", 64, 64, 32, 32, 32, 1, 1, 8)),
    ]
    # TMA (copy = tma on wgmma): box copies through tensor maps, mbarrier
    # ring; partial tiles and a K tail read as zeros, split-K with a last
    # split whose K tiles lie past K, block_k 128, persistent grids (one
    # with fewer K tiles than stages in flight), the staged epilogue.
    tma = [
        (4096, 4096, 4096, "bf16", "bf16", True, {"copy": "tma", "vector_width": 8}),
        (4097, 4088, 4096, "bf16", "bf16", True, {"copy": "tma", "vector_width": 8}),
        (100, 1000, 4104, "f16", "f32", True, {"copy": "tma"}),
        (33, 4096, 14336, "bf16", "bf16", True,
         {"copy": "tma", "vector_width": 8, "split_k": 4}),
        (64, 512, 776, "bf16", "f32", True,
         wgmma("tma", 64, 64, 64, 64, 64, 4, 4, 1, 2)),
        (257, 264, 1000, "f16", "f16", True,
         wgmma("tma", 128, 64, 128, 64, 64, 3, 1, 2, 8)),
        (7, 4096, 4096, "bf16", "bf16", True,
         wgmma("tma", 64, 32, 128, 64, 32, 5, 1, 1, 2)),
        (4097, 4095, 4096, "bf16", "f32", True, {"copy": "tma", "persistent": True}),
        (2048, 2056, 520, "f16", "f16", True,
         {"copy": "tma", "vector_width": 8, "persistent": True, "stages": 3}),
        (300, 1000, 64, "bf16", "bf16", True,
         wgmma("tma", 128, 128, 64, 64, 128, 4, 1, 4, 2, persistent=True)),
    ]
    # TF32 (kopt.matmul {tf32}, wgmma m64nNk8 through TMA): the staged
    # epilogue, odd N, a K tail with split-K, a row-major B (packed), a
    # tile larger than the problem, a persistent grid.
    tf32s = [
        (4096, 4096, 4096, "f32", "f32", True, tf32(128, 256, 64, 256, 32, 4, 4)),
        (4097, 4095, 4096, "f32", "f32", True, tf32(128, 128, 64, 128, 64, 3, 1)),
        (100, 1000, 1004, "f32", "f32", True, tf32(64, 64, 64, 64, 32, 4, 4, split_k=2)),
        (300, 1000, 1001, "f32", "f32", False, tf32(128, 128, 64, 128, 32, 3, 2)),
        (33, 17, 12, "f32", "f32", True, tf32(64, 16, 64, 16, 32, 2, 1)),
        (2048, 2056, 520, "f32", "f32", True,
         tf32(128, 128, 64, 128, 32, 3, 4, persistent=True)),
    ]
    # Warp specialization (a producer warp issues the TMA copies; the
    # consumers' epilogue syncs on a named barrier): partial tiles, split-K
    # (barrier.red on the named barrier) with a K tail, a decode tile,
    # persistent grids (one with fewer K tiles than stages), TF32: the TMA problems
    # but the f16 K tail and the 257 x 264 tile, and the first and the split-K TF32
    # ones, again with a producer warp.
    def producer_warp(rows):
        return [row[:6] + (dict(row[6], warp_specialize=True),) for row in rows]

    split += tma + tf32s + producer_warp(tma[:2] + tma[3:5] + tma[6:] +
                                         [tf32s[0], tf32s[2]])
    split += [
        # TMA store epilogue (tma_store: the staged tile leaves through swizzled
        # TMA boxes of 128, 64 or 32 bytes of C's tensor map, clipped at M and
        # N): full and
        # partial tiles, f32 C with cp.async loads, split-K with a producer warp
        # and M below the tile (boxes of 40 rows), persistent grids (the store
        # overlapping the next tile's K loop) with TMA and cp.async loads, a
        # decode tile of 16 columns, TF32.
        (4096, 4096, 4096, "bf16", "bf16", True,
         {"copy": "tma", "vector_width": 8, "tma_store": True}),
        (4097, 4088, 4096, "bf16", "bf16", True,
         {"copy": "tma", "vector_width": 8, "persistent": True, "stages": 3,
          "warp_specialize": True, "tma_store": True}),
        (300, 1000, 1000, "bf16", "f32", True,
         {"copy": "cp_async", "vector_width": 4, "tma_store": True}),
        (33, 4096, 14336, "bf16", "bf16", True,
         {"copy": "tma", "vector_width": 8, "split_k": 4, "warp_specialize": True,
          "tma_store": True}),
        (2048, 2056, 520, "f16", "f16", True,
         {"copy": "cp_async", "vector_width": 8, "persistent": True, "stages": 3,
          "tma_store": True}),
        (64, 768, 2048, "bf16", "bf16", True,
         wgmma("tma", 64, 16, 128, 64, 16, 4, 4, 1, 8, warp_specialize=True,
               tma_store=True)),
        (2048, 2056, 520, "f32", "f32", True,
         dict(tf32(128, 128, 64, 128, 32, 3, 4, persistent=True), tma_store=True)),
        # Warp tiles narrower than a box (warp_n 32, boxes of 64 columns): each
        # pair's whole swizzled address per store.
        (100, 1000, 1000, "bf16", "bf16", True,
         wgmma("tma", 64, 64, 64, 64, 32, 4, 1, 1, 8, tma_store=True)),
        # Deep rings and narrow tiles (stages 6 to 8, block_n 8): the decode
        # default (64 x 16, 8 stages, no split), 64 x 8 tiles with split-K and
        # 4-element stores, f32 C with cp.async loads, a K shorter than the
        # ring with a TMA store.
        (64, 768, 2048, "bf16", "bf16", True, {}),
        (33, 300, 2056, "bf16", "bf16", True,
         wgmma("tma", 64, 8, 128, 64, 8, 8, 2, 1, 4, warp_specialize=True)),
        (64, 1000, 1000, "f16", "f32", True,
         wgmma("cp_async", 64, 8, 128, 64, 8, 6, 1, 1, 2)),
        (32, 776, 256, "bf16", "bf16", True,
         wgmma("tma", 64, 16, 128, 64, 16, 8, 1, 1, 8, warp_specialize=True,
               tma_store=True)),
        # gemv (lanes split K): a partial block of columns and a K tail, split-K
        # with f32 C, partial M tiles, f32 operands, K below one lane step.
        (1, 1000, 1000, "bf16", "bf16", True, gemv(16, 32, 4, 16)),
        (5, 4096, 4104, "f16", "f32", True, gemv(16, 64, 8, 8, split_k=4)),
        (33, 300, 520, "bf16", "bf16", True, gemv(16, 16, 2, 8)),
        (8, 4096, 4096, "f32", "f32", True, gemv(16, 16, 4, 8, split_k=2)),
        (3, 17, 12, "f32", "f32", True, gemv(16, 16, 1, 8)),
        # ffma with two buffers (the next K tile through registers): odd sizes,
        # split-K, a tile with fewer elements than threads, a short K.
        (300, 200, 1000, "f32", "f32", False, {"stages": 2}),
        (4097, 4095, 4093, "f32", "f32", False, {"stages": 2}),
        (33, 17, 9, "f32", "f32", False,
         {"instruction": "ffma", "copy": "sync", "stages": 2, "block_m": 16,
          "block_n": 16, "warp_m": 16, "warp_n": 2, "block_k": 8, "split_k": 1,
          "swizzle": 1, "vector_width": 1}),
        (100, 1000, 4096, "f16", "f32", True,
         {"instruction": "ffma", "copy": "sync", "stages": 2, "block_m": 64,
          "block_n": 64, "warp_m": 32, "warp_n": 16, "block_k": 16, "split_k": 4,
          "swizzle": 1, "vector_width": 4}),
    ]
    for m, n, k, dt, rt, tb, sched in split:
        a, b = [m, k], ([n, k] if tb else [k, n])
        tf = dt == "f32" and sched.get("instruction") == "wgmma"
        flags = (["transpose_b"] if tb else []) + (["tf32"] if tf else [])
        attr = " {" + ", ".join(flags) + "}" if flags else ""
        name = (f"matmul_{dt}_{rt}_{m}x{n}x{k}" + ("_tb" if tb else "") +
                (f"_splitk{sched['split_k']}" if sched.get("split_k", 1) > 1 else "") +
                ("_persistent" if sched.get("persistent") else "") +
                ("_tma" if sched.get("copy") == "tma" and not tf else "") +
                ("_tf32" if tf else "") +
                ("_ws" if sched.get("warp_specialize") else "") +
                ("_tmastore" if sched.get("tma_store") else "") +
                (f"_bn{sched['block_n']}_st{sched['stages']}"
                 if sched.get("stages", 0) > 5 or sched.get("block_n") == 8 else "") +
                ("_default" if not sched else "") +
                (f"_vw{sched['vector_width']}" if sched.get("vector_width", 1) > 2
                 else "") +
                ("_gemv" if sched.get("instruction") == "gemv" else "") +
                ("_stages2" if sched.get("stages") == 2 and
                 sched.get("instruction", "ffma") == "ffma" else ""))
        add(name, [(a, dt), (b, dt)],
            lambda x, attr=attr, a=a, b=b, dt=dt, m=m, n=n, rt=rt:
            f"kopt.matmul {x[0]}, {x[1]}{attr} : {ttype(a, dt)}, {ttype(b, dt)} -> {ttype([m, n], rt)}",
            ([m, n], rt), schedule=sched)

    # kopt.pack written directly: (input shape, result shape, dtype, transpose)
    for ishape, rshape, dt, tr in [([4093, 4095], [4095, 4096], "bf16", True),
                                   ([4097, 4093], [4097, 4096], "f16", False),
                                   ([7, 33], [40, 8], "f32", True)]:
        name = f"pack_{dt}_" + "x".join(map(str, ishape)) + "_to_" + "x".join(map(str, rshape)) + ("_t" if tr else "")
        attr = " {transpose}" if tr else ""
        add(name, [(ishape, dt)],
            lambda x, attr=attr, ishape=ishape, rshape=rshape, dt=dt:
            f"kopt.pack {x[0]}{attr} : {ttype(ishape, dt)} -> {ttype(rshape, dt)}",
            (rshape, dt))

    # binary ops with broadcasting: (lhs shape, rhs shape, result shape, dtype)
    bshapes = [
        ([4096, 14336], [14336], [4096, 14336], "bf16"),  # bias over a Llama MLP activation
        ([7, 33], [7, 1], [7, 33], "f32"),
        ([3, 1, 5], [4, 1], [3, 4, 5], "f16"),
    ]
    for op in ["add", "sub", "mul", "div", "max", "min"]:
        for ls, rs, res, dt in bshapes:
            name = f"{op}_{dt}_" + "x".join(map(str, res))
            add(name, [(ls, dt), (rs, dt)],
                lambda x, op=op, ls=ls, rs=rs, res=res, dt=dt:
                f"kopt.{op} {x[0]}, {x[1]} : {ttype(ls, dt)}, {ttype(rs, dt)} -> {ttype(res, dt)}",
                (res, dt))

    ushapes = [([4096, 14336], "bf16"), ([7, 33], "f32"), ([4097], "f16")]
    unary = ["exp", "log", "log1p", "neg", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "relu",
             "silu"]
    for op in unary + ["gelu", "gelu_tanh"]:
        for shape, dt in ushapes:
            name = f"{op}_{dt}_" + "x".join(map(str, shape))
            mnemonic = "gelu" if op.startswith("gelu") else op
            extra = " approximate(tanh)" if op == "gelu_tanh" else ""
            add(name, [(shape, dt)],
                lambda x, m=mnemonic, e=extra, s=shape, dt=dt:
                f"kopt.{m} {x[0]}{e} : {ttype(s, dt)}",
                (shape, dt))

    for shape, src, dst in [([4096, 14336], "bf16", "f32"), ([7, 33], "f32", "bf16"),
                            ([4097], "f16", "bf16"), ([4096, 4096], "f32", "f16")]:
        name = f"cast_{src}_to_{dst}_" + "x".join(map(str, shape))
        add(name, [(shape, src)],
            lambda x, s=shape, a=src, b=dst: f"kopt.cast {x[0]} : {ttype(s, a)} to {ttype(s, b)}",
            (shape, dst))

    rshapes = [([4096, 32000], "bf16", "f32"), ([7, 33], "f32", "f32"),
               ([128256], "bf16", "bf16"), ([2, 3, 4097], "f16", "f16")]
    for kind in ["sum", "max", "mean"]:
        for shape, dt, rt in rshapes:
            name = f"reduce_{kind}_{dt}_" + "x".join(map(str, shape))
            add(name, [(shape, dt)],
                lambda x, k=kind, s=shape, dt=dt, rt=rt:
                f"kopt.reduce {k} {x[0]} : {ttype(s, dt)} -> {ttype(s[:-1], rt)}",
                (shape[:-1], rt))

    for shape, dt in [([4096, 32000], "bf16"), ([7, 33], "f32"), ([8, 128256], "f16"),
                      ([4096, 32000], "f32")]:
        name = "softmax_" + dt + "_" + "x".join(map(str, shape))
        add(name, [(shape, dt)],
            lambda x, s=shape, dt=dt: f"kopt.softmax {x[0]} : {ttype(s, dt)}", (shape, dt))

    # norms: (shape, dtype, weight, bias, eps)
    for shape, dt, w, eps in [([4096, 32000], "bf16", True, "1.0e-05"),
                              ([7, 33], "f32", False, "1.0e-06"),
                              ([16, 4096], "bf16", True, "1.0e-05"),
                              ([4096, 4096], "f32", True, "1.0e-05")]:
        name = f"rmsnorm_{dt}_" + "x".join(map(str, shape)) + ("_w" if w else "")
        args = [(shape, dt)] + ([([shape[-1]], dt)] if w else [])
        add(name, args,
            lambda x, s=shape, dt=dt, w=w, eps=eps:
            f"kopt.rmsnorm {x[0]}" + (f" weight({x[1]} : {ttype([s[-1]], dt)})" if w else "")
            + f" eps = {eps} : {ttype(s, dt)}",
            (shape, dt))
    for shape, dt, w, bb, eps in [([4096, 32000], "bf16", True, True, "1.0e-05"),
                                  ([7, 33], "f32", False, False, "1.0e-05"),
                                  ([2, 5, 1024], "f16", True, False, "1.0e-12"),
                                  ([512, 1600], "f32", False, True, "1.0e-05")]:
        name = f"layernorm_{dt}_" + "x".join(map(str, shape)) + ("_w" if w else "") + ("_b" if bb else "")
        args = [(shape, dt)] + ([([shape[-1]], dt)] if w else []) + ([([shape[-1]], dt)] if bb else [])

        def body(x, s=shape, dt=dt, w=w, bb=bb, eps=eps):
            i = 1
            txt = f"kopt.layernorm {x[0]}"
            if w:
                txt += f" weight({x[i]} : {ttype([s[-1]], dt)})"
                i += 1
            if bb:
                txt += f" bias({x[i]} : {ttype([s[-1]], dt)})"
            return txt + f" eps = {eps} : {ttype(s, dt)}"
        add(name, args, body, (shape, dt))
    return out


def function_text(name, args, results, lines):
    """A problem's file: function @name with arguments `args` [(name, type)], the op
    lines `lines`, returning `results` [(value, type)]."""
    sig = ", ".join(f"%{n}: {ty}" for n, ty in args)
    rets = ", ".join(v for v, _ in results)
    rtys = ", ".join(ty for _, ty in results)
    body = "".join(f"  {l}\n" for l in lines)
    return (f"// GPU test problem {name} (generated by test/gpu/problems.py)\n"
            f"func.func @{name}({sig}) -> ({rtys}) {{\n{body}"
            f"  return {rets} : {rtys}\n}}\n")


def chains():
    """Fused elementwise chains (kopt-fuse): (name, function text, schedule or None). Each is one kernel
    of several ops, checked by kopt-run against the ops' graph; awkward shapes: widths
    that are not a multiple of 8, a broadcast along a middle dimension, a scalar read
    by two ops, several outputs."""
    t = ttype
    out = []

    def fn(name, args, results, lines):
        out.append((name, function_text(name, args, results, lines), None))

    # Gemma-2 soft-capping at an odd width: tanh(x / cap) * cap, cap a scalar.
    x, c = t([7, 33], "f32"), t([], "f32")
    fn("chain_softcap_f32_7x33", [("x", x), ("cap", c)], [("%y", x)], [
        f"%z = kopt.div %x, %cap : {x}, {c} -> {x}",
        f"%th = kopt.tanh %z : {x}",
        f"%y = kopt.mul %th, %cap : {x}, {c} -> {x}"])
    # SwiGLU's silu(gate) * up: 16-byte accesses, and a width of 1001.
    for shape in ([4096, 14336], [5, 1001]):
        g = t(shape, "bf16")
        fn("chain_silu_mul_bf16_" + "x".join(map(str, shape)), [("g", g), ("u", g)],
           [("%p", g)], [f"%s = kopt.silu %g : {g}",
                         f"%p = kopt.mul %s, %u : {g}, {g} -> {g}"])
    # A bias broadcast along the middle dimension, GELU, a cast to f32.
    x, b, r = t([3, 4, 5], "f16"), t([4, 1], "f16"), t([3, 4, 5], "f32")
    fn("chain_add_gelu_cast_f16_3x4x5", [("x", x), ("b", b)], [("%r", r)], [
        f"%s = kopt.add %x, %b : {x}, {b} -> {x}",
        f"%g = kopt.gelu %s approximate(tanh) : {x}",
        f"%r = kopt.cast %g : {x} to {r}"])
    # Several outputs: the residual sum is returned and read by the rest of the chain.
    x, w = t([64, 4100], "bf16"), t([4100], "bf16")
    fn("chain_two_outputs_bf16_64x4100", [("x", x), ("res", x), ("w", w)],
       [("%s", x), ("%y", x)], [
        f"%s = kopt.add %x, %res : {x}, {x} -> {x}",
        f"%m = kopt.mul %s, %w : {x}, {w} -> {x}",
        f"%e = kopt.sigmoid %m : {x}",
        f"%y = kopt.sub %e, %s : {x}, {x} -> {x}"])
    out += row_chains()
    out += epilogue_chains()
    return out


def epilogue_chains():
    """Matmuls with their fused epilogues (kopt-fuse): bias + GELU (the staged
    epilogue), SwiGLU's silu(gate) * up (decode, split-K), a residual add (gemv),
    exact f32 (FFMA) with bias + relu, an odd N that the staged tile runs past
    (loads clamped inside C), a persistent grid with TMA stores, each with its
    default schedule or the one in NAME.sched.json. (name, text[, schedule])."""
    t = ttype
    out = []

    def fn(name, args, results, lines, schedule=None):
        out.append((name, function_text(name, args, results, lines), schedule))

    def mm(res, a, b, at, bt, rt, tb=True):
        return (f"%{res} = kopt.matmul %{a}, %{b}" + (" {transpose_b}" if tb else "")
                + f" : {at}, {bt} -> {rt}")

    # BERT's FFN1: bias + GELU on a 512 x 4096 f16 GEMM (staged 16-byte stores).
    x, w, r, bias = t([512, 1024], "f16"), t([4096, 1024], "f16"), t([512, 4096], "f16"), t([4096], "f16")
    fn("epi_bias_gelu_f16_512x4096x1024", [("x", x), ("w", w), ("b", bias)], [("%g", r)],
       [mm("m", "x", "w", x, w, r), f"%a = kopt.add %m, %b : {r}, {bias} -> {r}",
        f"%g = kopt.gelu %a : {r}"])
    # SwiGLU at decode: silu(x w_g^T) * (x w_u^T), M = 16 (split-K schedules).
    x, w, r = t([16, 4096], "bf16"), t([2048, 4096], "bf16"), t([16, 2048], "bf16")
    fn("epi_swiglu_bf16_16x2048x4096", [("x", x), ("wg", w), ("wu", w)], [("%p", r)],
       [mm("g", "x", "wg", x, w, r), mm("u", "x", "wu", x, w, r),
        f"%s = kopt.silu %g : {r}", f"%p = kopt.mul %s, %u : {r}, {r} -> {r}"])
    # A residual add on a decode GEMV (M = 1).
    x, w, r = t([1, 4096], "bf16"), t([4096, 4096], "bf16"), t([1, 4096], "bf16")
    fn("epi_residual_gemv_bf16_1x4096x4096", [("x", x), ("w", w), ("h", r)], [("%y", r)],
       [mm("m", "x", "w", x, w, r), f"%y = kopt.add %h, %m : {r}, {r} -> {r}"])
    # Exact f32 (FFMA) with a bias and relu, odd sizes.
    x, w, r, bias = t([100, 70], "f32"), t([70, 130], "f32"), t([100, 130], "f32"), t([130], "f32")
    fn("epi_bias_relu_f32_100x130x70", [("x", x), ("w", w), ("b", bias)], [("%y", r)],
       [mm("m", "x", "w", x, w, r, tb=False), f"%a = kopt.add %m, %b : {r}, {bias} -> {r}",
        f"%y = kopt.relu %a : {r}"])
    # N = 1000 is not a multiple of the 256-column block tile: the staged tile's last
    # columns lie past C (their bias loads clamped); a [M, 1] scale per row.
    x, w, r = t([300, 512], "bf16"), t([1000, 512], "bf16"), t([300, 1000], "bf16")
    bias, sc = t([1000], "bf16"), t([300, 1], "bf16")
    fn("epi_bias_scale_bf16_300x1000x512", [("x", x), ("w", w), ("b", bias), ("s", sc)],
       [("%y", r)],
       [mm("m", "x", "w", x, w, r), f"%a = kopt.add %m, %b : {r}, {bias} -> {r}",
        f"%y = kopt.mul %a, %s : {r}, {sc} -> {r}"])
    # A persistent grid with TMA stores of the staged tile, bias + SiLU.
    x, w, r, bias = t([1024, 2048], "bf16"), t([4096, 2048], "bf16"), t([1024, 4096], "bf16"), t([4096], "bf16")
    fn("epi_bias_silu_tma_store_bf16_1024x4096x2048", [("x", x), ("w", w), ("b", bias)],
       [("%y", r)],
       [mm("m", "x", "w", x, w, r), f"%a = kopt.add %m, %b : {r}, {bias} -> {r}",
        f"%y = kopt.silu %a : {r}"],
       schedule={"persistent": True, "tma_store": True, "stages": 3})
    return out


def row_chains():
    """Row kernels at the launch shapes the row plan picks (lib/KernelBuilders/Row.cpp),
    and row ops fused with elementwise producers and consumers: a thread per row (4
    columns), two threads per row (8 experts), rows sharing a warp (head_dim 128), a last chunk past the row's end
    and rows not a multiple of the rows per block (1000 x 1600), width 1, a row too
    long for registers (loops) with a fused consumer; add + RMSNorm with both
    results, scale + mask + softmax, softmax then a cast, add + LayerNorm; rows split
    across a thread-block cluster, in registers and in loops."""
    t = ttype
    out = []

    def fn(name, args, results, lines):
        out.append((name, function_text(name, args, results, lines), None))

    x = t([4096, 8], "f32")
    fn("row_softmax_f32_4096x8", [("x", x)], [("%y", x)], [f"%y = kopt.softmax %x : {x}"])
    # One 16-byte access per row: a thread per row.
    x = t([1000, 4], "f32")
    fn("row_softmax_f32_1000x4", [("x", x)], [("%y", x)], [f"%y = kopt.softmax %x : {x}"])
    x, w = t([65536, 128], "bf16"), t([128], "bf16")
    fn("row_rmsnorm_bf16_65536x128", [("x", x), ("w", w)], [("%y", x)],
       [f"%y = kopt.rmsnorm %x weight(%w : {w}) eps = 1.0e-06 : {x}"])
    x, w = t([1000, 1600], "f32"), t([1600], "f32")
    fn("row_layernorm_f32_1000x1600", [("x", x), ("w", w), ("b", w)], [("%y", x)],
       [f"%y = kopt.layernorm %x weight(%w : {w}) bias(%b : {w}) eps = 1.0e-05 : {x}"])
    x, r = t([3, 1], "bf16"), t([3], "f32")
    fn("row_width1_bf16_3x1", [("x", x)], [("%y", x), ("%s", r)],
       [f"%y = kopt.softmax %x : {x}", f"%s = kopt.reduce sum %x : {x} -> {r}"])
    x, c = t([3, 70001], "f32"), t([3, 70001], "bf16")
    fn("row_softmax_cast_loop_f32_3x70001", [("x", x)], [("%c", c)],
       [f"%y = kopt.softmax %x : {x}", f"%c = kopt.cast %y : {x} to {c}"])
    x, w = t([2048, 4096], "bf16"), t([4096], "bf16")
    fn("row_add_rmsnorm_bf16_2048x4096", [("h", x), ("a", x), ("w", w)],
       [("%s", x), ("%y", x)],
       [f"%s = kopt.add %h, %a : {x}, {x} -> {x}",
        f"%y = kopt.rmsnorm %s weight(%w : {w}) eps = 1.0e-05 : {x}"])
    x, c, m = t([1, 4, 128, 128], "bf16"), t([], "bf16"), t([128, 128], "bf16")
    fn("row_scale_mask_softmax_bf16_1x4x128x128", [("x", x), ("c", c), ("m", m)],
       [("%p", x)],
       [f"%s = kopt.mul %x, %c : {x}, {c} -> {x}",
        f"%a = kopt.add %s, %m : {x}, {m} -> {x}",
        f"%p = kopt.softmax %a : {x}"])
    x, r = t([7, 33], "bf16"), t([7, 33], "f32")
    fn("row_softmax_cast_bf16_7x33", [("x", x)], [("%r", r)],
       [f"%p = kopt.softmax %x : {x}", f"%r = kopt.cast %p : {x} to {r}"])
    x, w = t([9, 1024], "f16"), t([1024], "f16")
    fn("row_add_layernorm_f16_9x1024", [("x", x), ("res", x), ("w", w), ("b", w)],
       [("%y", x)],
       [f"%s = kopt.add %x, %res : {x}, {x} -> {x}",
        f"%y = kopt.layernorm %s weight(%w : {w}) bias(%b : {w}) eps = 1.0e-12 : {x}"])
    # Rows split across a thread-block cluster: Qwen3's vocabulary softmax at decode
    # (8 blocks per row, 3 chunks each), Llama-3's sampling softmax with the
    # temperature division fused (4 blocks per row), a LayerNorm of 200000 columns
    # (two reductions, 8 blocks), a single row of 1000003 columns too long even for a
    # cluster (loops with a stride of 8 blocks) and a width that forbids vectors.
    x = t([16, 151936], "bf16")
    fn("row_cluster_softmax_bf16_16x151936", [("x", x)], [("%y", x)],
       [f"%y = kopt.softmax %x : {x}"])
    x, c = t([64, 128256], "f32"), t([], "f32")
    fn("row_cluster_div_softmax_f32_64x128256", [("x", x), ("temp", c)], [("%y", x)],
       [f"%z = kopt.div %x, %temp : {x}, {c} -> {x}", f"%y = kopt.softmax %z : {x}"])
    x, w = t([4, 200000], "f32"), t([200000], "f32")
    fn("row_cluster_layernorm_f32_4x200000", [("x", x), ("w", w), ("b", w)], [("%y", x)],
       [f"%y = kopt.layernorm %x weight(%w : {w}) bias(%b : {w}) eps = 1.0e-05 : {x}"])
    x, r = t([1, 1000003], "f32"), t([1], "f32")
    fn("row_cluster_loop_f32_1x1000003", [("x", x)], [("%y", x), ("%m", r)],
       [f"%y = kopt.softmax %x : {x}", f"%m = kopt.reduce max %x : {x} -> {r}"])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: problems.py OUT_DIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, args, body_fn, (rshape, rdt), schedule in problems():
        names = [f"%arg{i}" for i in range(len(args))]
        sig = ", ".join(f"{n}: {ttype(s, d)}" for n, (s, d) in zip(names, args))
        rt = ttype(rshape, rdt)
        text = (f"// GPU test problem {name} (generated by test/gpu/problems.py)\n"
                f"func.func @{name}({sig}) -> {rt} {{\n"
                f"  %0 = {body_fn(names)}\n"
                f"  return %0 : {rt}\n}}\n")
        with open(os.path.join(outdir, name + ".mlir"), "w") as f:
            f.write(text)
        if schedule is not None:
            with open(os.path.join(outdir, name + ".sched.json"), "w") as f:
                json.dump(schedule, f)
    for name, text, schedule in chains():
        with open(os.path.join(outdir, name + ".mlir"), "w") as f:
            f.write(text)
        if schedule is not None:
            with open(os.path.join(outdir, name + ".sched.json"), "w") as f:
                json.dump(schedule, f)
    print(f"wrote {len(problems()) + len(chains())} problems to {outdir}")


if __name__ == "__main__":
    main()
