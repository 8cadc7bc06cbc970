"""The candidate schedules of bench/compile_sweep.py's sweeps, per problem (a dict of
compile_sweep.problem()): the default grid (candidates()) and each mode's variants
(--split-k: split_bases(), --persistent, --epilogue, --tma, --warp-specialize,
--tma-store, --decode*, --gemv, --tf32). They only propose: kopt decides what is
valid (kopt-opt rejects what does not fit) and compile_sweep.py records it."""
import json


def tf32_candidates(p):
    """The TF32 sweep's schedules for problem p (f32 operands, TF32 allowed): wgmma
    with TMA copies, block_k 32 and 64 (128 and 256 bytes of f32), four warpgroup
    tiles, 3 or 4 stages (also 5 for the 64-row tiles). Validity is kopt's to
    decide: kopt-opt rejects what does not fit (shared memory, layouts)."""
    sw = 8 if p["m"] >= 512 else 1
    vw = 4 if p["n"] % 4 == 0 else (2 if p["n"] % 2 == 0 else 1)
    out = []
    for bm, bn, wm, wn in ((128, 256, 64, 256), (128, 128, 64, 128), (64, 128, 64, 128),
                           (64, 64, 64, 64)):
        for bk in (32, 64):
            for st in ((3, 4) if bm > 64 else (3, 4, 5)):
                out.append({"instruction": "wgmma", "copy": "tma", "stages": st,
                            "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                            "block_k": bk, "swizzle": sw, "vector_width": vw,
                            "split_k": 1, "persistent": False})
    return out


def candidates(p):
    """The sweep's schedules for problem p (validity is kopt's to decide)."""
    out = []
    if p["dtype"] == "f32":
        for bm, bn, wm, wn in ((64, 64, 32, 16), (128, 64, 32, 32), (64, 128, 32, 32),
                               (128, 128, 64, 32), (32, 64, 16, 16), (64, 32, 16, 16),
                               (128, 128, 32, 32), (256, 128, 64, 64)):
            for bk in (8, 16, 32):
                threads = 32 * (bm // wm) * (bn // wn)
                chunked = (bm // (threads // 16)) % 4 == 0 and (bn // 16) % 4 == 0
                out.append({"instruction": "ffma", "copy": "sync", "stages": 1,
                            "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                            "block_k": bk, "swizzle": 8 if p["m"] >= 512 else 1,
                            "vector_width": 4 if chunked and p["n"] % 4 == 0 else 1})
        return out
    if p["m"] <= 64:
        tiles = ((16, 64, 16, 16), (16, 128, 16, 32), (32, 64, 32, 16),
                 (32, 128, 32, 32), (64, 32, 64, 8), (64, 64, 64, 16),
                 (64, 128, 64, 32), (16, 256, 16, 64))
        ks_, stages = (32, 64), (3, 4, 5)
    else:
        tiles = ((128, 128, 64, 32), (128, 128, 64, 64), (128, 256, 64, 64),
                 (256, 128, 64, 64), (128, 64, 64, 32), (64, 128, 32, 64),
                 (64, 64, 32, 32), (256, 64, 64, 32))
        ks_, stages = (32, 64), (3, 4)
    async_ok = (not p["transpose_a"]) and p["transpose_b"] and p["k"] % 8 == 0
    if async_ok:
        # wgmma: warpgroup tiles of 64 or 128 rows, N up to 256, K step 64.
        big_tiles = -(-p["m"] // 128) * -(-p["n"] // 256)
        if p["m"] <= 64:
            wg_tiles = ((64, 32, 64, 32), (64, 64, 64, 64), (64, 128, 64, 128),
                        (64, 256, 64, 256))
            wg_stages = (4, 5)
        elif big_tiles < 100:
            # Small grids: the decode tiles as well.
            wg_tiles = ((64, 32, 64, 32), (64, 64, 64, 64), (64, 128, 64, 128),
                        (128, 128, 64, 128), (128, 256, 64, 256), (64, 256, 64, 256))
            wg_stages = (3, 4, 5)
        else:
            wg_tiles = ((128, 256, 64, 256), (128, 128, 64, 128), (64, 256, 64, 256),
                        (128, 256, 128, 128), (256, 128, 128, 128), (64, 128, 64, 128),
                        (128, 128, 128, 64))
            wg_stages = (3, 4, 5)
        for bm, bn, wm, wn in wg_tiles:
            for bk in (64, 128):
                for st in wg_stages + ((2,) if bk == 128 else ()):
                    # Skip what cannot fit the 227 KB of shared memory.
                    if st * (bm + bn) * bk * 2 > 227 * 1024:
                        continue
                    out.append({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                                "block_m": bm, "block_n": bn, "warp_m": wm,
                                "warp_n": wn, "block_k": bk,
                                "swizzle": 8 if p["m"] >= 512 else 1,
                                "vector_width": 2 if p["n"] % 2 == 0 else 1})
    for bm, bn, wm, wn in tiles:
        for bk in ks_:
            for st in (stages if async_ok else (1,)):
                out.append({"instruction": "mma_sync",
                            "copy": "cp_async" if async_ok else "sync",
                            "stages": st, "block_m": bm, "block_n": bn,
                            "warp_m": wm, "warp_n": wn, "block_k": bk,
                            "swizzle": 8 if p["m"] >= 512 else 1,
                            "vector_width": 2 if p["n"] % 2 == 0 else 1})
    return out


def split_bases(p, default):
    """Schedules whose split_k the split-K sweep varies: the default and a few tiles
    around it (small grids are where splitting K pays)."""
    vw = 2 if p["n"] % 2 == 0 else 1
    if p["dtype"] == "f32":
        shapes = [(64, 32, 16, 16, 16), (64, 64, 32, 16, 16), (32, 64, 16, 16, 16),
                  (128, 128, 64, 32, 8)]
        if p["m"] <= 64:  # decode: smaller and wider tiles, longer K steps
            shapes += [(16, 64, 16, 16, 16), (16, 64, 16, 16, 32), (16, 64, 16, 16, 64),
                       (32, 64, 16, 16, 32), (32, 64, 16, 16, 64), (32, 128, 16, 32, 16),
                       (32, 128, 16, 32, 32), (16, 128, 16, 32, 32)]
        tiles = [dict(block_m=bm, block_n=bn, warp_m=wm, warp_n=wn, block_k=bk)
                 for bm, bn, wm, wn, bk in shapes]
        base = {"instruction": "ffma", "copy": "sync", "stages": 1, "swizzle": 1}
        out = [dict(base, **t, vector_width=4 if t["block_m"] == 128 and p["n"] % 4 == 0
                    else 1) for t in tiles]
    else:
        tiles = ((64, 32, 64, 32, 128, 5), (64, 64, 64, 64, 128, 5),
                 (64, 128, 64, 128, 64, 5), (128, 128, 64, 128, 64, 4))
        out = [{"instruction": "wgmma", "copy": "cp_async", "stages": st, "block_m": bm,
                "block_n": bn, "warp_m": wm, "warp_n": wn, "block_k": bk,
                "swizzle": 1, "vector_width": vw} for bm, bn, wm, wn, bk, st in tiles]
    base = {k: v for k, v in default.items() if k != "num_warps"}
    return [base] + out


def persistent_bases(p, default):
    """Schedules whose `persistent` the persistent sweep varies (wgmma problems)."""
    vw = 2 if p["n"] % 2 == 0 else 1
    sw = 8 if p["m"] >= 512 else 1
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    for bm, bn, wm, wn, bk, st in ((128, 256, 64, 256, 64, 4), (128, 256, 64, 256, 64, 3),
                                   (128, 128, 64, 128, 64, 4), (128, 128, 64, 128, 128, 3),
                                   (256, 128, 128, 128, 64, 4)):
        out.append({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                    "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                    "block_k": bk, "swizzle": sw, "vector_width": vw, "split_k": 1})
    return out


def epilogue_bases(p, default):
    """Schedules whose epilogue the epilogue sweep varies (tensor-core problems):
    the default, and for grids of many 128 x 256 tiles the 128 x 128 tile and
    persistent 128 x 256 grids with 3 stages (the staged tile follows the stages)."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    if base.get("instruction") == "wgmma" and p["m"] > 64:
        out += wgmma_tiles(p, ((128, 128, 64, 128, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)))
    return out


def wgmma_tiles(p, tiles, **fields):
    """cp.async wgmma schedules of `tiles` (block_m, block_n, warp_m, warp_n, block_k,
    stages, persistent), swizzle 8 for M >= 512, no split; `fields` added to each."""
    sw = 8 if p["m"] >= 512 else 1
    return [dict({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                  "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                  "block_k": bk, "swizzle": sw, "split_k": 1, "persistent": pe},
                 **fields)
            for bm, bn, wm, wn, bk, st, pe in tiles]


def epilogue_widths(p):
    """Register epilogue width and staged width for problem p's C."""
    narrow = 2 if p["n"] % 2 == 0 else 1
    wide = 4 if p["out_dtype"] == "f32" else 8
    return [narrow] + ([wide] if p["n"] % wide == 0 else [])


def tma_bases(p, default):
    """wgmma schedules whose copy engine the TMA sweep varies: the default and, for
    problems with M > 64, the 128 x 256 and 128 x 128 tiles (plain and persistent)."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    if base.get("instruction") != "wgmma":
        return []
    out = [base]
    if p["m"] > 64:
        vw = 8 if p["out_dtype"] != "f32" and p["n"] % 8 == 0 else (
            2 if p["n"] % 2 == 0 else 1)
        out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                               (128, 128, 64, 128, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)), vector_width=vw)
    return out


def ws_bases(p, default):
    """TMA schedules whose warp_specialize the warp-specialization sweep varies: the
    default (copy = tma), on decode tiles (M <= 64) also with 3 and 5 stages; for
    M > 64 the 128 x 256 tile and persistent 128 x 256 (3 stages) and 128 x 128 grids."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    if base.get("instruction") != "wgmma":
        return []
    base = dict(base, copy="tma")
    out = [base]
    if p["m"] <= 64:
        out += [dict(base, stages=st) for st in (3, 5) if st != base["stages"]]
    else:
        vw = 8 if p["out_dtype"] != "f32" and p["n"] % 8 == 0 else (
            2 if p["n"] % 2 == 0 else 1)
        out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)), vector_width=vw,
                           copy="tma")
    return out


def both_ways(p, bases, key):
    """Jobs of problem `p`: each of `bases` with the boolean parameter `key` false
    and true (tagged `key`), schedules that come out equal only once."""
    jobs, seen = [], set()
    for b in bases:
        for on in (False, True):
            v = dict(b, **{key: on})
            text = json.dumps(v, sort_keys=True)
            if text not in seen:
                seen.add(text)
                jobs.append((p, v, [key], None))
    return jobs


def tma_store_bases(p, default):
    """Schedules whose tma_store the TMA-store sweep varies: the default and, for
    f16/bf16 operands, wgmma tiles with TMA copies and a staged epilogue
    (vector_width 8 for 16-bit C, 4 for f32 C; tma_store needs one): 128 x 256
    without and with a producer warp, persistent warp-specialized 128 x 256 (3
    stages) and 128 x 128 grids and, for M <= 64, the 64 x 16 decode tile (block_k
    128, split_k 4, a producer warp). Validity is kopt's to decide."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    if p["dtype"] not in ("f16", "bf16"):
        return out
    vw = 4 if p["out_dtype"] == "f32" else 8
    out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),), copy="tma",
                       vector_width=vw, warp_specialize=False)
    out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                           (128, 256, 64, 256, 64, 3, True),
                           (128, 128, 64, 128, 64, 4, True)), copy="tma",
                       vector_width=vw, warp_specialize=True)
    if p["m"] <= 64:
        out += wgmma_tiles(p, ((64, 16, 64, 16, 128, 4, False),), copy="tma",
                           vector_width=vw, split_k=4, warp_specialize=True)
    return out


def decode_candidates(p, default, widths=(32, 64), splits=(1, 2, 4), stages=(2, 3, 4, 5),
                      **fields):
    """wgmma tiles for the decode problems (M <= 64): one warpgroup of 64 x `widths`
    (32 or 64), block_k 64 or 128, 2 to 5 stages (fewer stages: more blocks per SM),
    `splits` (split_k 1, 2 and 4: more blocks), the default's epilogue width, cp.async
    unless `fields` (added to each) say otherwise."""
    if default.get("instruction") != "wgmma" or p["m"] > 64:
        return []
    vw = default.get("vector_width", 2)
    return [dict({"instruction": "wgmma", "copy": "cp_async", "block_m": 64,
                  "block_n": bn, "warp_m": 64, "warp_n": bn, "block_k": bk,
                  "stages": st, "split_k": sk, "swizzle": 1, "vector_width": vw,
                  "persistent": False}, **fields)
            for bn in widths for bk in (64, 128) for st in stages for sk in splits]


def decode_ws_candidates(p, default):
    """decode_candidates() through TMA with a producer warp (copy = tma,
    warp_specialize = true), also with 64 x 16 tiles and split_k 8."""
    return decode_candidates(p, default, widths=(16, 32, 64), splits=(1, 2, 4, 8),
                             copy="tma", warp_specialize=True)


def decode_deep_candidates(p, default):
    """Narrow decode tiles with deep rings through TMA with a producer warp: 64 x 8
    and 64 x 16 tiles, block_k 64 or 128, 4 to 8 stages, split_k 1, 2 or 4 (cuBLAS
    runs the Qwen3 expert shapes with 64 x 8 tiles and no split:
    bench/results/2026-11-30-decode-deep-h200)."""
    return decode_candidates(p, default, widths=(8, 16), splits=(1, 2, 4),
                             stages=(4, 5, 6, 7, 8), copy="tma", warp_specialize=True)


def gemv_candidates(p):
    """gemv schedules for a small-M problem with both operands contiguous along K."""
    if p["m"] > 64 or p["transpose_a"] or not p["transpose_b"]:
        return []
    f32 = p["dtype"] == "f32"
    out = []
    for bm in ((16,) if p["m"] <= 16 else (16, 32)):
        rows = min(bm, p["m"])
        for wn in (1, 2, 4, 8):
            if rows * wn > 64 or (rows > 16 and wn > 2) or (rows <= 8 and wn < 2):
                continue
            for warps in (4, 8, 16):
                if not 16 <= wn * warps <= 64:
                    continue
                for bk in ((8, 16) if f32 else (8, 16, 32)):
                    for sk in (1, 2):
                        out.append({"instruction": "gemv", "copy": "sync", "stages": 1,
                                    "block_m": bm, "warp_m": bm, "block_n": wn * warps,
                                    "warp_n": wn, "block_k": bk, "split_k": sk,
                                    "swizzle": 1, "vector_width": 1,
                                    "persistent": False})
    return out
