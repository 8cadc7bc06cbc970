//===- ScheduleTest.cpp - the matmul schedule space and heuristic ---------===//

#include "kopt/Schedule/Schedule.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace kopt::schedule;
using nlohmann::json;

namespace {

MatmulWorkload linear(int64_t m, int64_t n, int64_t k, DType dt = DType::BF16) {
  MatmulWorkload w;
  w.m = m, w.n = n, w.k = k;
  w.a = w.b = w.c = dt;
  w.aKContiguous = true;
  w.bKContiguous = true; // a Linear weight, [N, K]
  return w;
}

Target h200() { return *Target::forChip("sm_90a"); }

TEST(Schedule, DefaultIsValidForEveryWorkloadShape) {
  const int64_t sizes[] = {1,  2,  7,   15,   16,   17,  63,
                           64, 65, 100, 4093, 4096, 4097};
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (bool aK : {true, false})
      for (bool bK : {true, false})
        for (int64_t m : sizes)
          for (int64_t k : sizes) {
            MatmulWorkload w = linear(m, 33, k, dt);
            w.aKContiguous = aK, w.bKContiguous = bK;
            MatmulSchedule s = defaultSchedule(w, h200());
            EXPECT_EQ(validate(s, w, h200()), std::nullopt)
                << w.key("sm_90a") << ": " << *validate(s, w, h200());
          }
}

TEST(Schedule, DefaultPicksTheInstructionByDtype) {
  EXPECT_EQ(defaultSchedule(linear(4096, 4096, 4096), h200()).instruction,
            Instruction::Wgmma);
  EXPECT_EQ(defaultSchedule(linear(4096, 4096, 4096), *Target::forChip("sm_90"))
                .instruction,
            Instruction::MmaSync);
  EXPECT_EQ(
      defaultSchedule(linear(4096, 4096, 4096, DType::F32), h200()).instruction,
      Instruction::FFMA);
  MatmulWorkload rowMajorB = linear(4096, 4096, 4096);
  rowMajorB.bKContiguous = false;
  EXPECT_EQ(defaultSchedule(rowMajorB, h200()).copy, CopyEngine::Sync);
  // The prefill tile loads through TMA: on 512 tiles (at least 3 per SM) as
  // a persistent grid with a producer warp and 3 stages, on 384 not.
  MatmulSchedule big = defaultSchedule(linear(4096, 4096, 4096), h200());
  EXPECT_EQ(big.copy, CopyEngine::TMA);
  EXPECT_TRUE(big.persistent);
  EXPECT_TRUE(big.warpSpecialize);
  EXPECT_EQ(big.stages, 3);
  MatmulSchedule qkv = defaultSchedule(linear(2048, 6144, 4096), h200());
  EXPECT_EQ(qkv.copy, CopyEngine::TMA);
  EXPECT_FALSE(qkv.persistent);
  EXPECT_FALSE(qkv.warpSpecialize);
  EXPECT_EQ(qkv.stages, 4);
  // Decode tiles: TMA with a producer warp, A's boxes cut to M rows.
  MatmulSchedule decode = defaultSchedule(linear(16, 4096, 4096), h200());
  EXPECT_EQ(decode.copy, CopyEngine::TMA);
  EXPECT_TRUE(decode.warpSpecialize);
  EXPECT_FALSE(decode.persistent);
  EXPECT_EQ(tmaBoxRows(decode.blockM, 16), 16);
  EXPECT_EQ(tmaBoxRows(64, 13), 16);
  EXPECT_EQ(tmaBoxRows(64, 100), 64);
  EXPECT_EQ(tmaBoxRows(256, 4096), 256);
  // f32 C keeps the register epilogue, and cp.async.
  MatmulWorkload f32c = linear(4096, 4096, 4096);
  f32c.c = DType::F32;
  EXPECT_EQ(defaultSchedule(f32c, h200()).copy, CopyEngine::CpAsync);
}

TEST(Schedule, Tf32) {
  MatmulWorkload w = linear(4096, 4096, 4096, DType::F32);
  MatmulSchedule s;
  s.instruction = Instruction::Wgmma;
  s.copy = CopyEngine::TMA;
  s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 256;
  s.blockK = 32, s.stages = 4, s.vectorWidth = 4;
  auto reason = [&](MatmulSchedule t, const MatmulWorkload &wl) {
    std::optional<std::string> r = validate(t, wl, h200());
    return r ? *r : std::string("valid");
  };
  // Exact f32 semantics: no tensor cores.
  EXPECT_NE(reason(s, w).find("or f32 ones with TF32 allowed"),
            std::string::npos);
  w.tf32 = true;
  EXPECT_EQ(reason(s, w), "valid");
  EXPECT_EQ(w.key("sm_90a"), "matmul/4096x4096x4096/f32,f32->f32+tf32/ak,bk/"
                             "sm_90a");
  // 128-byte rows hold 32 f32: block_k 32 or 64; stages of 4-byte elements.
  EXPECT_EQ(pipelineSharedBytes(s, w), 4 * (128 + 256) * 32 * 4);
  MatmulSchedule bk128 = s;
  bk128.blockK = 128;
  EXPECT_NE(reason(bk128, w).find("32 f32 elements: block_k must be 32 or 64"),
            std::string::npos);
  // TMA only; K rows a multiple of 16 bytes (4 f32).
  MatmulSchedule cp = s;
  cp.copy = CopyEngine::CpAsync;
  EXPECT_NE(reason(cp, w).find("copy must be tma"), std::string::npos);
  MatmulWorkload odd = w;
  odd.k = 4094;
  EXPECT_NE(reason(s, odd).find("must be a multiple of 4"), std::string::npos);
  odd.k = 4092;
  EXPECT_EQ(reason(s, odd), "valid");
  // The default: wgmma through TMA above M = 64, gemv for M <= 8, ffma
  // without tf32.
  MatmulSchedule d = defaultSchedule(w, h200());
  EXPECT_EQ(d.instruction, Instruction::Wgmma);
  EXPECT_EQ(d.copy, CopyEngine::TMA);
  EXPECT_EQ(d.blockK, 32);
  EXPECT_EQ(
      defaultSchedule(linear(8, 4096, 4096, DType::F32), h200()).instruction,
      Instruction::Gemv);
  MatmulWorkload m8 = linear(8, 4096, 4096, DType::F32);
  m8.tf32 = true;
  EXPECT_EQ(defaultSchedule(m8, h200()).instruction, Instruction::Gemv);
  EXPECT_EQ(
      defaultSchedule(linear(4096, 4096, 4096, DType::F32), h200()).instruction,
      Instruction::FFMA);
  // Tensor maps take dimensions up to 2^32.
  MatmulWorkload huge = w;
  huge.m = (int64_t(1) << 32) + 64;
  EXPECT_NE(reason(s, huge).find("dimensions up to 2^32"), std::string::npos);
  // mma_sync stays 16-bit only.
  MatmulSchedule mma = s;
  mma.instruction = Instruction::MmaSync;
  mma.copy = CopyEngine::CpAsync;
  EXPECT_NE(reason(mma, w).find("mma_sync needs f16 or bf16"),
            std::string::npos);
}

TEST(Schedule, Tma) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s = defaultSchedule(w, h200());
  // The non-persistent prefill tile, 4 stages, without a producer warp.
  s.persistent = false, s.warpSpecialize = false, s.stages = 4;
  ASSERT_EQ(s.copy, CopyEngine::TMA);
  ASSERT_EQ(s.instruction, Instruction::Wgmma);
  // A full and an empty mbarrier per stage after the stages.
  EXPECT_EQ(barrierSharedBytes(s), 4 * 2 * 8);
  EXPECT_EQ(sharedBytes(s, w), 196608 + 64);
  MatmulSchedule c = s;
  c.copy = CopyEngine::CpAsync;
  EXPECT_EQ(barrierSharedBytes(c), 0);
  EXPECT_EQ(sharedBytes(c, w), 196608);
  auto reason = [&](MatmulSchedule t, const MatmulWorkload &wl) {
    std::optional<std::string> r = validate(t, wl, h200());
    return r ? *r : std::string("valid");
  };
  // TMA needs no per-thread chunk split: two warpgroups of 64 x 16 with
  // block_k 64 have 128 16-byte chunks of B, not a multiple of 256 threads.
  MatmulSchedule small = s;
  small.blockM = 128, small.blockN = 16, small.warpM = 64, small.warpN = 16;
  small.vectorWidth = 2;
  EXPECT_EQ(reason(small, w), "valid");
  small.copy = CopyEngine::CpAsync;
  EXPECT_NE(reason(small, w).find("not a multiple of the 256 threads"),
            std::string::npos);
  // Not for other instructions, K-contiguous operands, 16-byte row pitch.
  MatmulSchedule mma = s;
  mma.instruction = Instruction::MmaSync;
  EXPECT_NE(reason(mma, w).find("copy = tma is implemented for wgmma"),
            std::string::npos);
  MatmulWorkload rowMajorB = w;
  rowMajorB.bKContiguous = false;
  EXPECT_NE(reason(s, rowMajorB)
                .find("filled by tma) needs both operands "
                      "contiguous along K"),
            std::string::npos);
  EXPECT_NE(reason(s, linear(4096, 4096, 4092)).find("multiple of 16 bytes"),
            std::string::npos);
  MatmulSchedule one = s;
  one.stages = 1;
  EXPECT_NE(reason(one, w).find("stages >= 2"), std::string::npos);
  // The shared-memory reason names the mbarriers.
  MatmulSchedule big = s;
  big.stages = 5;
  EXPECT_NE(reason(big, w).find("(+ 80 bytes of mbarriers)"),
            std::string::npos);
  // A partial schedule switching to mma_sync does not keep TMA.
  std::string error;
  std::optional<MatmulSchedule> m =
      fromJSON(json{{"instruction", "mma_sync"}}, s, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->copy, CopyEngine::CpAsync);
  std::optional<MatmulSchedule> kept =
      fromJSON(json{{"instruction", "mma_sync"}, {"copy", "tma"}}, s, error);
  ASSERT_TRUE(kept) << error;
  EXPECT_EQ(kept->copy, CopyEngine::TMA);
}

TEST(Schedule, WarpSpecialize) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s = defaultSchedule(w, h200());
  // The non-persistent prefill tile, 4 stages, without a producer warp.
  s.persistent = false, s.warpSpecialize = false, s.stages = 4;
  ASSERT_EQ(s.copy, CopyEngine::TMA);
  // 128 x 256 tile of two warpgroups: 8 warps, + 1 producer warp.
  MatmulSchedule ws = s;
  ws.warpSpecialize = true;
  EXPECT_EQ(s.numWarps(), 8);
  EXPECT_EQ(ws.mathWarps(), 8);
  EXPECT_EQ(ws.numWarps(), 9);
  EXPECT_EQ(ws.threads(), 288);
  EXPECT_EQ(validate(ws, w, h200()), std::nullopt);
  EXPECT_NE(s, ws);
  // Shared memory is the same: the producer uses the same ring.
  EXPECT_EQ(sharedBytes(ws, w), sharedBytes(s, w));
  // The reason alone (validate's message adds the constraint's id).
  auto reason = [&](MatmulSchedule t) {
    std::optional<Rejection> r = check(t, w, h200());
    return r ? r->reason : std::string("valid");
  };
  MatmulSchedule cp = ws;
  cp.copy = CopyEngine::CpAsync;
  EXPECT_EQ(reason(cp), "warp_specialize = true needs wgmma with copy = tma "
                        "(its producer warp issues TMA copies), not wgmma "
                        "with copy = cp_async");
  MatmulSchedule mma = ws;
  mma.instruction = Instruction::MmaSync;
  mma.copy = CopyEngine::CpAsync;
  mma.warpM = 64, mma.warpN = 64;
  EXPECT_NE(reason(mma).find("warp_specialize = true needs wgmma"),
            std::string::npos);
  // Persistent and split-K grids take it.
  MatmulSchedule pe = ws;
  pe.persistent = true, pe.stages = 3;
  EXPECT_EQ(reason(pe), "valid");
  MatmulSchedule sk = ws;
  sk.splitK = 4;
  EXPECT_EQ(reason(sk), "valid");
  // JSON: the key round-trips; num_warps counts the producer warp.
  std::string error;
  json j = toJSON(ws);
  EXPECT_EQ(j["warp_specialize"], true);
  EXPECT_EQ(j["num_warps"], 9);
  std::optional<MatmulSchedule> back = fromJSON(j, MatmulSchedule(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, ws);
  EXPECT_FALSE(fromJSON(json{{"warp_specialize", 1}}, s, error));
  EXPECT_EQ(error, "'warp_specialize' must be true or false");
  EXPECT_FALSE(
      fromJSON(json{{"warp_specialize", true}, {"num_warps", 8}}, s, error));
  EXPECT_NE(error.find("+ 1 (the producer warp) = 9"), std::string::npos)
      << error;
  // A partial schedule leaving wgmma / tma drops the base's producer warp;
  // one that names it keeps it (and validate says why it does not fit).
  std::optional<MatmulSchedule> m =
      fromJSON(json{{"copy", "cp_async"}}, ws, error);
  ASSERT_TRUE(m) << error;
  EXPECT_FALSE(m->warpSpecialize);
  std::optional<MatmulSchedule> kept = fromJSON(
      json{{"copy", "cp_async"}, {"warp_specialize", true}}, ws, error);
  ASSERT_TRUE(kept) << error;
  EXPECT_TRUE(kept->warpSpecialize);
  std::optional<MatmulSchedule> stages =
      fromJSON(json{{"stages", 3}}, ws, error);
  ASSERT_TRUE(stages) << error;
  EXPECT_TRUE(stages->warpSpecialize);
  // The space: a domain, and valid points with it (wgmma + tma only).
  EXPECT_EQ(domains()["warp_specialize"], json::array({false, true}));
  int withWs = 0;
  for (const MatmulSchedule &p : validPoints(linear(256, 256, 256), h200()))
    if (p.warpSpecialize) {
      ++withWs;
      EXPECT_EQ(p.instruction, Instruction::Wgmma);
      EXPECT_EQ(p.copy, CopyEngine::TMA);
    }
  EXPECT_GT(withWs, 0);
}

TEST(Schedule, TmaStore) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s = defaultSchedule(w, h200());
  ASSERT_EQ(s.instruction, Instruction::Wgmma);
  ASSERT_EQ(s.vectorWidth, 8);
  MatmulSchedule ts = s;
  ts.tmaStore = true;
  // The reason alone (validate's message adds the constraint's id).
  auto reason = [&](MatmulSchedule t, MatmulWorkload wl) {
    std::optional<Rejection> r = check(t, wl, h200());
    return r ? r->reason : std::string("valid");
  };
  EXPECT_EQ(reason(ts, w), "valid");
  EXPECT_NE(s, ts);
  // The staging tile is the staged epilogue's memory: no more bytes.
  EXPECT_EQ(sharedBytes(ts, w), sharedBytes(s, w));
  // Box rows of 128, 64 or 32 bytes: the largest dividing block_n's.
  EXPECT_EQ(tmaStoreSwizzleBytes(256 * 2), 128);
  EXPECT_EQ(tmaStoreSwizzleBytes(32 * 2), 64);
  EXPECT_EQ(tmaStoreSwizzleBytes(16 * 2), 32);
  EXPECT_EQ(tmaStoreSwizzleBytes(48 * 2), 32);
  EXPECT_EQ(tmaStoreSwizzleBytes(8 * 2), 0);
  // cp.async loads, split-K and decode tiles of 16 columns take it.
  MatmulSchedule cp = ts;
  cp.copy = CopyEngine::CpAsync, cp.persistent = false,
  cp.warpSpecialize = false, cp.stages = 4;
  EXPECT_EQ(reason(cp, w), "valid");
  MatmulWorkload decode = linear(64, 768, 2048);
  MatmulSchedule d = defaultSchedule(decode, h200());
  d.vectorWidth = 8, d.tmaStore = true;
  ASSERT_EQ(d.blockN, 16);
  EXPECT_EQ(reason(d, decode), "valid");
  // What it needs: wgmma, a staged epilogue, 32-byte column boxes, a
  // 16-byte row pitch of C.
  MatmulSchedule mma = ts;
  mma.instruction = Instruction::MmaSync, mma.copy = CopyEngine::CpAsync;
  mma.persistent = false, mma.warpSpecialize = false;
  mma.warpM = 64, mma.warpN = 64, mma.blockK = 32, mma.stages = 3;
  EXPECT_EQ(reason(mma, w),
            "tma_store = true is implemented for wgmma (sm_90a) only, not "
            "mma_sync");
  MatmulSchedule narrow = ts;
  narrow.vectorWidth = 2;
  EXPECT_EQ(reason(narrow, w), "tma_store = true stores the staged epilogue "
                               "tile: vector_width must be above 2, got 2");
  MatmulWorkload odd = w;
  odd.n = 4092; // 8184-byte rows
  MatmulSchedule four = ts;
  four.vectorWidth = 4;
  EXPECT_EQ(reason(four, odd),
            "tma_store = true needs C's row pitch to be a multiple of 16 "
            "bytes (TMA): N (4092) must be a multiple of 8 for bf16");
  // Boxes are at least 32 bytes of columns: block_n 8 of bf16 is 16.
  MatmulSchedule n8 = ts;
  n8.blockN = n8.warpN = 8, n8.blockM = n8.warpM = 64, n8.persistent = false;
  n8.warpSpecialize = false, n8.stages = 4;
  EXPECT_EQ(reason(n8, w), "tma_store = true stores boxes of 32 to 128 bytes "
                           "of columns: block_n * sizeof(bf16) (16 bytes) must "
                           "be a multiple of 32");
  MatmulWorkload f32c = w;
  f32c.c = DType::F32;
  n8.vectorWidth = 4;
  EXPECT_EQ(reason(n8, f32c), "valid"); // 32 bytes of f32
  // JSON round trip, the type check and partial schedules.
  std::string error;
  json j = toJSON(ts);
  EXPECT_EQ(j["tma_store"], true);
  std::optional<MatmulSchedule> back = fromJSON(j, MatmulSchedule(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, ts);
  EXPECT_FALSE(fromJSON(json{{"tma_store", "yes"}}, s, error));
  EXPECT_EQ(error, "'tma_store' must be true or false");
  std::optional<MatmulSchedule> on =
      fromJSON(json{{"tma_store", true}}, s, error);
  ASSERT_TRUE(on) << error;
  EXPECT_TRUE(on->tmaStore);
  // Leaving the staged epilogue or wgmma without naming it drops it.
  std::optional<MatmulSchedule> off =
      fromJSON(json{{"vector_width", 2}}, ts, error);
  ASSERT_TRUE(off) << error;
  EXPECT_FALSE(off->tmaStore);
  std::optional<MatmulSchedule> named =
      fromJSON(json{{"vector_width", 2}, {"tma_store", true}}, ts, error);
  ASSERT_TRUE(named) << error;
  EXPECT_TRUE(named->tmaStore);
  // The space: a domain, valid points only on wgmma with a staged epilogue.
  EXPECT_EQ(domains()["tma_store"], json::array({false, true}));
  int withStore = 0;
  for (const MatmulSchedule &p : validPoints(linear(256, 256, 256), h200()))
    if (p.tmaStore) {
      ++withStore;
      EXPECT_EQ(p.instruction, Instruction::Wgmma);
      EXPECT_GT(p.vectorWidth, 2);
    }
  EXPECT_GT(withStore, 0);
}

TEST(Schedule, PartialSchedulesLeaveWhatCannotApply) {
  // The 4096^3 default is persistent with a producer warp: a split drops the
  // persistent grid, another instruction both (and TMA).
  MatmulSchedule base = defaultSchedule(linear(4096, 4096, 4096), h200());
  ASSERT_TRUE(base.persistent && base.warpSpecialize);
  std::string error;
  std::optional<MatmulSchedule> split =
      fromJSON(json{{"split_k", 2}}, base, error);
  ASSERT_TRUE(split) << error;
  EXPECT_FALSE(split->persistent);
  EXPECT_TRUE(split->warpSpecialize);
  EXPECT_EQ(validate(*split, linear(4096, 4096, 4096), h200()), std::nullopt);
  std::optional<MatmulSchedule> mma = fromJSON(
      json{{"instruction", "mma_sync"}, {"warp_m", 64}, {"warp_n", 64}}, base,
      error);
  ASSERT_TRUE(mma) << error;
  EXPECT_FALSE(mma->persistent);
  EXPECT_FALSE(mma->warpSpecialize);
  EXPECT_EQ(mma->copy, CopyEngine::CpAsync);
  // A producer warp asked for on a cp.async schedule brings TMA with it.
  MatmulSchedule cp = base;
  cp.copy = CopyEngine::CpAsync, cp.warpSpecialize = false;
  std::optional<MatmulSchedule> ws =
      fromJSON(json{{"warp_specialize", true}}, cp, error);
  ASSERT_TRUE(ws) << error;
  EXPECT_EQ(ws->copy, CopyEngine::TMA);
  EXPECT_TRUE(ws->warpSpecialize);
  // Named, they stay (and validate says why they do not fit).
  std::optional<MatmulSchedule> both =
      fromJSON(json{{"split_k", 2}, {"persistent", true}}, base, error);
  ASSERT_TRUE(both) << error;
  EXPECT_TRUE(both->persistent);
  EXPECT_NE(validate(*both, linear(4096, 4096, 4096), h200()), std::nullopt);
}

TEST(Schedule, SwizzleEntersNoConstraint) {
  // validPoints validates each point with one swizzle only: the verdict of
  // validate must not depend on it (drawn points, several workloads).
  std::mt19937_64 rng(7);
  for (const MatmulWorkload &w :
       {linear(4096, 4096, 4096), linear(33, 17, 9), linear(1, 6144, 4096)})
    for (int i = 0; i < 20000; ++i) {
      MatmulSchedule s = samplePoint(rng);
      std::optional<std::string> first = validate(s, w, h200());
      for (int64_t sw : domains()["swizzle"]) {
        MatmulSchedule v = s;
        v.swizzle = sw;
        EXPECT_EQ(validate(v, w, h200()).has_value(), first.has_value())
            << toJSON(v).dump();
      }
    }
}

TEST(Schedule, ValidateNamesTheReason) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  // mma_sync, cp_async, 128 x 128 x 32 tiles, 64 x 32 warp tiles, 2 stages.
  MatmulSchedule s;
  ASSERT_EQ(validate(s, w, h200()), std::nullopt);
  auto reason = [&](auto edit) {
    MatmulSchedule t = s;
    edit(t);
    std::optional<std::string> r = validate(t, w, h200());
    return r ? *r : std::string("valid");
  };
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.copy = CopyEngine::TMA;
            }).find("copy = tma is implemented for wgmma (sm_90a) only"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.instruction = Instruction::Wgmma;
            }).find("block_k must be 64 or 128"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.blockM = 48;
            }).find("block_m = 48 is not in its domain"),
            std::string::npos);
  // Split-K: a domain, at least one K tile per split, bounded partials.
  EXPECT_EQ(reason([](MatmulSchedule &t) { t.splitK = 16; }), "valid");
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.splitK = 3;
            }).find("split_k = 3 is not in its domain [1, 2, 4, 8, 16]"),
            std::string::npos);
  {
    // K = 480, block_k = 32: 15 K tiles, fewer than 16 splits.
    MatmulSchedule t = s;
    t.splitK = 16;
    std::optional<std::string> r = validate(t, linear(4096, 4096, 480), h200());
    ASSERT_TRUE(r);
    EXPECT_NE(r->find("split_k = 16 exceeds the 15 K tiles"), std::string::npos)
        << *r;
    t.splitK = 8;
    EXPECT_EQ(validate(t, linear(4096, 4096, 480), h200()), std::nullopt);
  }
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.warpM = 128;
              t.blockM = 64;
            }).find("multiple of warp_m"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) { t.blockK = 8; }).find("mma K step"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.blockM = 256, t.blockN = 128;
              t.warpM = t.warpN = 64;
              t.blockK = 64;
              t.stages = 5;
            }).find("bytes of shared memory"),
            std::string::npos);
  // 512 threads get 128 registers each: 128 accumulators do not fit.
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.blockM = t.blockN = 256;
              t.warpM = t.warpN = 64;
              t.blockK = 64;
              t.stages = 2;
            }).find("registers per thread; 512 threads get at most 128"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.instruction = Instruction::Wgmma;
              t.blockM = 256, t.blockN = 256;
              t.warpM = 64, t.warpN = 256;
              t.blockK = 64;
              t.stages = 3;
            }).find("registers per thread"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.stages = 1;
            }).find("cp_async needs stages >= 2"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) {
              t.copy = CopyEngine::Sync;
            }).find("copy = sync takes stages = 1"),
            std::string::npos);
  MatmulWorkload odd = linear(4097, 4095, 4093);
  MatmulSchedule v = s;
  v.vectorWidth = 2;
  EXPECT_NE(validate(v, odd, h200())->find("vector_width"), std::string::npos);
  EXPECT_NE(validate(s, odd, h200())->find("K (4093) must be a multiple of 8"),
            std::string::npos);
  MatmulWorkload f32 = linear(64, 64, 64, DType::F32);
  EXPECT_NE(validate(s, f32, h200())->find("mma_sync needs f16 or bf16"),
            std::string::npos);
}

TEST(Schedule, SharedMemoryLimitFollowsTheChip) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s;
  s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 64, s.blockK = 64;
  s.stages = 4; // 4 * 384 * 72 * 2 = 221184 bytes
  EXPECT_EQ(sharedBytes(s, w), 221184);
  EXPECT_EQ(validate(s, w, h200()), std::nullopt);
  EXPECT_NE(validate(s, w, *Target::forChip("sm_80")), std::nullopt);
  EXPECT_NE(validate(s, w, *Target::forChip("sm_86")), std::nullopt);
  EXPECT_FALSE(Target::forChip("sm_75").has_value());
  // The default fits the smaller shared memory of sm_86 with tensor cores.
  MatmulSchedule d = defaultSchedule(w, *Target::forChip("sm_86"));
  EXPECT_EQ(d.instruction, Instruction::MmaSync);
  EXPECT_EQ(validate(d, w, *Target::forChip("sm_86")), std::nullopt);
}

TEST(Schedule, Wgmma) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s;
  s.instruction = Instruction::Wgmma;
  s.copy = CopyEngine::CpAsync;
  s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 256, s.blockK = 64;
  s.stages = 4;
  EXPECT_EQ(s.numWarps(), 8); // two warpgroups
  EXPECT_EQ(sharedBytes(s, w), 4 * (128 + 256) * 64 * 2);
  EXPECT_EQ(validate(s, w, h200()), std::nullopt);
  EXPECT_NE(validate(s, w, *Target::forChip("sm_90"))->find("needs sm_90a"),
            std::string::npos);
  MatmulSchedule big = s;
  big.warpM = 128; // 2 * 128 accumulators
  big.blockM = 128;
  EXPECT_NE(validate(big, w, h200())->find("accumulators"), std::string::npos);
  MatmulWorkload rowMajorB = w;
  rowMajorB.bKContiguous = false;
  EXPECT_NE(validate(s, rowMajorB, h200())->find("contiguous along K"),
            std::string::npos);
}

TEST(Schedule, StagedEpilogue) {
  MatmulWorkload w = linear(4096, 4096, 4096); // bf16 C
  MatmulSchedule s;
  s.instruction = Instruction::Wgmma;
  s.copy = CopyEngine::CpAsync;
  s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 256, s.blockK = 64;
  s.stages = 4;
  s.vectorWidth = 8;
  EXPECT_TRUE(stagedEpilogue(s));
  // 128 rows of (256 + 8) bf16, reusing the 196608 bytes of the stages.
  EXPECT_EQ(epilogueRowPitch(s, w), 528);
  EXPECT_EQ(epilogueSharedBytes(s, w), 128 * 528);
  EXPECT_EQ(pipelineSharedBytes(s, w), 196608);
  EXPECT_EQ(sharedBytes(s, w), 196608);
  EXPECT_EQ(validate(s, w, h200()), std::nullopt);
  // Persistent: the tile follows the stages; 4 stages no longer fit, 3 do.
  MatmulSchedule p = s;
  p.persistent = true;
  EXPECT_EQ(sharedBytes(p, w), 196608 + 67584);
  EXPECT_NE(validate(p, w, h200())->find("plus the 128x256 bf16 epilogue tile"),
            std::string::npos);
  p.stages = 3;
  EXPECT_EQ(validate(p, w, h200()), std::nullopt);
  // f32 C: 16-byte stores are 4 elements; rows padded by 8 floats.
  MatmulWorkload f32c = w;
  f32c.c = DType::F32;
  EXPECT_NE(validate(s, f32c, h200())->find("32-byte stores"),
            std::string::npos);
  MatmulSchedule s4 = s;
  s4.vectorWidth = 4;
  EXPECT_EQ(epilogueRowPitch(s4, f32c), (256 + 8) * 4);
  EXPECT_EQ(validate(s4, f32c, h200()), std::nullopt);
  // Without staging (vector_width <= 2, or ffma) no tile.
  MatmulSchedule s2 = s;
  s2.vectorWidth = 2;
  EXPECT_FALSE(stagedEpilogue(s2));
  EXPECT_EQ(epilogueSharedBytes(s2, w), 0);
  // mma_sync with a larger tile than its stages: the tile decides.
  MatmulSchedule m;
  m.blockM = 128, m.blockN = 128, m.warpM = 64, m.warpN = 32, m.blockK = 16;
  m.stages = 2, m.vectorWidth = 4; // stages 2 * 256 * 24 * 2 = 24576 bytes
  EXPECT_EQ(sharedBytes(m, f32c), 128 * (128 + 8) * 4);
  EXPECT_EQ(validate(m, f32c, h200()), std::nullopt);
  // N must be a multiple of the width.
  EXPECT_NE(validate(s, linear(4096, 4100, 4096), h200())
                ->find("multiple of it (N = 4100)"),
            std::string::npos);
  // ffma stores 1 or 4 at a time.
  MatmulWorkload f32 = linear(256, 256, 256, DType::F32);
  MatmulSchedule f = defaultSchedule(f32, h200());
  f.vectorWidth = 8;
  EXPECT_NE(validate(f, f32, h200()), std::nullopt);
}

TEST(Schedule, Gemv) {
  // The default for M = 1 (16-bit) and M <= 8 (f32), both operands along K.
  MatmulWorkload q = linear(1, 6144, 4096);
  MatmulSchedule s = defaultSchedule(q, h200());
  EXPECT_EQ(s.instruction, Instruction::Gemv);
  EXPECT_EQ(s.numWarps(), 8); // 16 columns, 2 per warp
  EXPECT_EQ(sharedBytes(s, q), 0);
  EXPECT_EQ(validate(s, q, h200()), std::nullopt);
  MatmulWorkload f = linear(8, 4096, 4096, DType::F32);
  EXPECT_EQ(defaultSchedule(f, h200()).instruction, Instruction::Gemv);
  EXPECT_EQ(
      defaultSchedule(linear(9, 4096, 4096, DType::F32), h200()).instruction,
      Instruction::FFMA);
  EXPECT_EQ(defaultSchedule(linear(2, 4096, 4096), h200()).instruction,
            Instruction::Wgmma);
  MatmulWorkload rowMajorB = q;
  rowMajorB.bKContiguous = false;
  EXPECT_NE(defaultSchedule(rowMajorB, h200()).instruction, Instruction::Gemv);
  auto reason = [&](auto edit, MatmulWorkload w) {
    MatmulSchedule t = s;
    edit(t);
    std::optional<std::string> r = validate(t, w, h200());
    return r ? *r : std::string("valid");
  };
  EXPECT_NE(reason([](MatmulSchedule &) {}, rowMajorB)
                .find("both must be contiguous along K"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &) {}, linear(1, 64, 4100))
                .find("K (4100) must be a multiple of 8"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) { t.blockK = 64; }, q)
                .find("at most 32 for bf16"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) { t.vectorWidth = 2; }, q)
                .find("vector_width must be 1"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) { t.warpM = 8; }, q).find("warp_m"),
            std::string::npos);
  EXPECT_NE(reason([](MatmulSchedule &t) { t.stages = 2; }, q)
                .find("copy = sync and stages = 1"),
            std::string::npos);
  // 16 rows x 8 columns = 128 accumulators per lane: too many.
  EXPECT_NE(reason(
                [](MatmulSchedule &t) {
                  t.warpN = 8;
                  t.blockN = 64;
                },
                linear(16, 4096, 4096))
                .find("accumulators per lane"),
            std::string::npos);
  // wgmma takes no warp_n below 8 (the domain starts at 1 for gemv).
  MatmulSchedule w = defaultSchedule(linear(4096, 4096, 4096), h200());
  w.warpN = 4, w.blockN = 4;
  EXPECT_NE(validate(w, linear(4096, 4096, 4096), h200()), std::nullopt);
}

TEST(Schedule, ParseJSON) {
  std::string error;
  std::optional<json> ok = parseJSON(R"({"a": {"b": 1}, "b": 2})", error);
  ASSERT_TRUE(ok.has_value()) << error;
  EXPECT_EQ((*ok)["a"]["b"], 1);
  EXPECT_FALSE(parseJSON("{\"block_m\": 64,\n", error).has_value());
  EXPECT_NE(error.find("parse error at line 2, column 1"), std::string::npos)
      << error;
  // A key twice in one object (also nested) is an error, not "last wins".
  EXPECT_FALSE(parseJSON(R"({"x": {"k": 1, "k": 2}})", error).has_value());
  EXPECT_NE(error.find("the key 'k' appears twice"), std::string::npos);
  EXPECT_FALSE(parseJSON("", error).has_value());
  EXPECT_FALSE(parseJSON("NaN", error).has_value());
  EXPECT_FALSE(parseJSON(R"({"stages": 1e400})", error).has_value());
  EXPECT_NE(error.find("number overflow"), std::string::npos) << error;
  EXPECT_NE(error.find("(at byte "), std::string::npos) << error;
}

TEST(Schedule, JsonRoundTrip) {
  MatmulSchedule s;
  s.blockM = 64, s.blockN = 256, s.warpM = 32, s.warpN = 64, s.stages = 4;
  s.swizzle = 8, s.vectorWidth = 2;
  json j = toJSON(s);
  EXPECT_EQ(j["num_warps"], 8);
  std::string error;
  std::optional<MatmulSchedule> back = fromJSON(j, MatmulSchedule(), error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, s);
}

TEST(Schedule, JsonPartialAndErrors) {
  MatmulSchedule base;
  std::string error;
  std::optional<MatmulSchedule> s = fromJSON(json{{"stages", 4}}, base, error);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->stages, 4);
  EXPECT_EQ(s->blockM, base.blockM);

  auto errorOf = [&](const json &j) {
    std::string e;
    EXPECT_FALSE(fromJSON(j, base, e).has_value()) << j.dump();
    return e;
  };
  EXPECT_EQ(errorOf(json::array()), "a schedule must be a JSON object");
  EXPECT_EQ(errorOf(json{{"tiles", 1}}), "unknown schedule parameter 'tiles'");
  EXPECT_NE(errorOf(json{{"block_m", "128"}}).find("an integer from 1 to 2^20"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"block_m", -4}}).find("an integer from 1 to 2^20"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"block_m", 1.5}}).find("an integer from 1 to 2^20"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"instruction", "hmma"}}).find("ffma, mma_sync"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"copy", 3}}).find("must be a string"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"persistent", 1}}).find("true or false"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"num_warps", 3}}).find("disagrees"),
            std::string::npos);
}

TEST(Schedule, SamplingIsDeterministicAndValidPointsValidate) {
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(samplePoint(a), samplePoint(b));
  MatmulWorkload w = linear(37, 45, 7, DType::F16);
  std::vector<MatmulSchedule> valid = validPoints(w, h200());
  EXPECT_FALSE(valid.empty());
  for (const MatmulSchedule &s : valid)
    ASSERT_EQ(validate(s, w, h200()), std::nullopt);
  // K = 7: no cp.async point is valid.
  for (const MatmulSchedule &s : valid)
    EXPECT_NE(s.copy, CopyEngine::CpAsync);
}

TEST(Schedule, HugeGridsDoNotWrap) {
  MatmulWorkload w = linear(int64_t(1) << 36, int64_t(1) << 36, 16, DType::F16);
  MatmulSchedule s;
  s.instruction = Instruction::MmaSync;
  s.copy = CopyEngine::CpAsync;
  s.blockM = s.blockN = 16, s.warpM = 16, s.warpN = 16, s.blockK = 16;
  s.stages = 2;
  std::optional<std::string> r = validate(s, w, h200());
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("the grid of"), std::string::npos);
}

TEST(Schedule, WorkloadKey) {
  MatmulWorkload w = linear(16, 4096, 14336);
  EXPECT_EQ(w.key("sm_90a"),
            "matmul/16x4096x14336/bf16,bf16->bf16/ak,bk/sm_90a");
  w.bKContiguous = false;
  w.c = DType::F32;
  EXPECT_EQ(w.key("sm_90"), "matmul/16x4096x14336/bf16,bf16->f32/ak,bn/sm_90");
}

TEST(Schedule, DecodeDeepRing) {
  // Grids of at most 33 tiles of 64 x 32 with 16 K tiles: 64 x 16 tiles, 8
  // stages, no split (16-bit C, TMA with a producer warp).
  for (int64_t m : {32, 64}) {
    MatmulWorkload w = linear(m, 768, 2048);
    MatmulSchedule s = defaultSchedule(w, h200());
    EXPECT_EQ(s.instruction, Instruction::Wgmma);
    EXPECT_EQ(s.blockN, 16);
    EXPECT_EQ(s.blockK, 128);
    EXPECT_EQ(s.stages, 8);
    EXPECT_EQ(s.splitK, 1);
    EXPECT_EQ(s.copy, CopyEngine::TMA);
    EXPECT_TRUE(s.warpSpecialize);
    EXPECT_EQ(validate(s, w, h200()), std::nullopt);
    // 8 x (64 + 16) x 128 bf16 + the mbarriers: one block per SM.
    EXPECT_EQ(sharedBytes(s, w), 8 * 80 * 128 * 2 + 16 * 8);
  }
  // f32 C (cp.async, no staged epilogue) keeps the split in 4.
  MatmulWorkload f32c = linear(64, 768, 2048);
  f32c.c = DType::F32;
  MatmulSchedule s = defaultSchedule(f32c, h200());
  EXPECT_EQ(s.splitK, 4);
  EXPECT_EQ(s.stages, 4);
  // A longer K keeps the split (16 x 1024 x 4096: 32 K tiles).
  MatmulSchedule longK = defaultSchedule(linear(16, 1024, 4096), h200());
  EXPECT_EQ(longK.splitK, 4);
  EXPECT_EQ(longK.stages, 4);
  // A grid of more tiles keeps its rule (64 x 2048 x 768: 64 x 32, 5 stages).
  MatmulSchedule wide = defaultSchedule(linear(64, 2048, 768), h200());
  EXPECT_EQ(wide.blockN, 32);
  EXPECT_EQ(wide.stages, 5);
  EXPECT_EQ(wide.splitK, 1);
}

TEST(Schedule, SpaceJson) {
  json space = spaceJSON(linear(4096, 4096, 4096), h200());
  EXPECT_EQ(space["class"], "matmul");
  EXPECT_GT(space["valid_points"].get<int64_t>(), 1000);
  EXPECT_EQ(space["domains"]["stages"], json({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(space["domains"]["block_n"], json({8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(space["default"],
            toJSON(defaultSchedule(linear(4096, 4096, 4096), h200())));
}

} // namespace

TEST(Schedule, SplitKWorkspace) {
  MatmulWorkload w = linear(32, 4096, 14336);
  MatmulSchedule s;
  s.blockM = 64, s.blockN = 32;
  EXPECT_EQ(splitKWorkspaceElements(s, w), 0);
  s.splitK = 4;
  // 1 x 128 tiles -> 128 counters, then 4 x 32 x 4096 partials.
  EXPECT_EQ(splitKWorkspaceElements(s, w), 128 + 4 * 32 * 4096);
  s.blockN = 256; // 16 tiles -> counters padded to 32
  EXPECT_EQ(splitKWorkspaceElements(s, w), 32 + 4 * 32 * 4096);
  EXPECT_EQ(gridBlocks(s, w), 16 * 4);
}

TEST(Schedule, PersistentGrid) {
  MatmulWorkload w = linear(4096, 4096, 4096);
  MatmulSchedule s = defaultSchedule(w, h200());
  ASSERT_EQ(s.instruction, Instruction::Wgmma);
  // The default: persistent, 3 stages, the staged tile after them.
  EXPECT_TRUE(s.persistent);
  EXPECT_EQ(validate(s, w, h200()), std::nullopt);
  EXPECT_EQ(sharedBytes(s, w), 3 * 49152 + 128 * 264 * 2 + 48);
  s.stages = 4, s.warpSpecialize = false;
  // The default's staged epilogue tile (vector_width 8) does not fit beside
  // its 4 stages; the register epilogue does.
  EXPECT_NE(validate(s, w, h200()), std::nullopt);
  s.vectorWidth = 2;
  EXPECT_EQ(validate(s, w, h200()), std::nullopt);
  // 128 x 256 tiles, 4 stages: 196 KB of shared memory, one block per SM.
  EXPECT_EQ(persistentGridBlocks(s, w, h200()), 132);
  // Fewer tiles than SMs: one block per tile.
  EXPECT_EQ(persistentGridBlocks(s, linear(256, 512, 4096), h200()), 4);
  // Small tiles: 2048 threads per SM allow 16 blocks of 128 threads, shared
  // memory (2 stages of 64 x 64 x 64: 32 KB + 1 KB reserved of 228 KB) 6.
  MatmulSchedule small = s;
  small.blockM = 64, small.blockN = 64, small.warpM = 64, small.warpN = 64;
  small.stages = 2;
  EXPECT_EQ(persistentGridBlocks(small, w, h200()), 132 * 6);
  MatmulSchedule mma;
  mma.persistent = true;
  std::optional<std::string> r = validate(mma, w, h200());
  ASSERT_TRUE(r);
  EXPECT_NE(r->find("persistent = true is implemented for wgmma"),
            std::string::npos);
}

TEST(Schedule, PersistentPartialDropsTheSplit) {
  MatmulSchedule base;
  base.instruction = Instruction::Wgmma;
  base.splitK = 2;
  std::string error;
  std::optional<MatmulSchedule> s =
      fromJSON(nlohmann::json{{"persistent", true}}, base, error);
  ASSERT_TRUE(s) << error;
  EXPECT_TRUE(s->persistent);
  EXPECT_EQ(s->splitK, 1);
  // Named explicitly, split_k is kept (and validate() says why it cannot be).
  s = fromJSON(nlohmann::json{{"persistent", true}, {"split_k", 2}}, base,
               error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->splitK, 2);
}

//===----------------------------------------------------------------------===//
// Constraints as data
//===----------------------------------------------------------------------===//

TEST(Constraints, IdsAreUniqueAndFindable) {
  std::set<std::string> ids;
  for (const Constraint &c : constraints()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
    EXPECT_EQ(findConstraint(c.id), &c);
    EXPECT_NE(std::string(c.rule), "");
    EXPECT_NE(c.check, nullptr);
  }
  EXPECT_EQ(findConstraint("no-such-constraint"), nullptr);
  EXPECT_EQ(constraintsJSON().size(), constraints().size());
  EXPECT_EQ(constraintsJSON()[0]["id"], constraints()[0].id);
}

TEST(Constraints, RejectionsNameTheirConstraint) {
  MatmulWorkload w;
  w.m = w.n = w.k = 4096;
  w.a = w.b = w.c = DType::BF16;
  w.aKContiguous = w.bKContiguous = true;
  MatmulSchedule s = defaultSchedule(w, h200());
  ASSERT_EQ(check(s, w, h200()), std::nullopt);

  struct Case {
    const char *id;
    void (*edit)(MatmulSchedule &);
  };
  for (const Case &c : std::vector<Case>{
           {"domains", [](MatmulSchedule &s) { s.blockM = 24; }},
           {"wgmma.block-k",
            [](MatmulSchedule &s) {
              s.instruction = Instruction::Wgmma;
              s.blockK = 32;
            }},
           {"tma.wgmma-only",
            [](MatmulSchedule &s) {
              s.instruction = Instruction::MmaSync;
              s.copy = CopyEngine::TMA;
            }},
           {"warp-grid",
            [](MatmulSchedule &s) {
              s.blockM = 64;
              s.warpM = 128;
            }},
       }) {
    MatmulSchedule bad = s;
    c.edit(bad);
    std::optional<Rejection> r = check(bad, w, h200());
    ASSERT_TRUE(r.has_value()) << c.id;
    EXPECT_STREQ(r->constraint->id, c.id) << r->reason;
    EXPECT_EQ(*validate(bad, w, h200()),
              r->reason + " [" + r->constraint->id + "]");
  }
}

TEST(Constraints, Documented) {
  // docs/schedules.md carries the table of every constraint, as the code has
  // it: "| `id` | rule |".
  std::ifstream in(std::string(KOPT_SOURCE_DIR) + "/docs/schedules.md");
  ASSERT_TRUE(in) << "cannot read docs/schedules.md";
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  for (const Constraint &c : constraints()) {
    std::string row = std::string("| `") + c.id + "` | " + c.rule + " |";
    EXPECT_NE(doc.find(row), std::string::npos)
        << "docs/schedules.md lacks (or words differently) the row\n"
        << row;
  }
}
