#!/usr/bin/env bash
# Records replay tables on a GPU host: a uniform random sample of the schedule
# space of suite problems, each point compiled, checked and measured on the GPU
# by kopt-tune, one table per problem (JSON lines, xz-compressed), for
# researchers to compare search strategies without a GPU
# (kopt-tune --measurer=replay, kopt-tune --report; docs/tuning.md).
#
#   bench/record_replay.sh OUT [--budget N] [--seconds S] [--runs R]
#                          [--time-budget MS] [--jobs J] [--batch-size B]
#                          [--import TABLE.jsonl.xz]... NAME...
#
# For each suite problem NAME: bench/gen_mlir.py writes OUT/mlir/NAME.mlir, then
#   kopt-tune OUT/mlir/NAME.mlir --strategy=random --seed=0 --budget=N
#             --runs=R --time-budget=MS --jobs=J --db=OUT/replay.db
#             --session=replay-NAME --resume --log=OUT/logs/NAME.jsonl
#             --time-limit=S --batch-size=B
# (no batch starts after S seconds; a timeout a minute later is the net: a
# kill loses the batch in flight, never the database). Run again with the same
# OUT, or on a fresh host with --import of the tables recorded before, to
# extend the tables: each problem's session resumes without repeating a point. At the end every session
# is written to OUT/tables/NAME.jsonl.xz (Database::exportJSONL's records) and
# the counts to OUT/tables/README.txt.
#
# Defaults: --budget 2000 --seconds 600 --runs 10 --time-budget 30 --jobs (cores)
# --batch-size 32.
# Needs kopt-tune and kopt-run on PATH (a bundle's bin/: scripts/bundle.sh),
# python3, xz and a GPU.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h|--help) usage; exit 0;; esac
out=$1; shift
budget=2000 seconds=600 runs=10 tb=30 jobs=$(nproc) batch=32
names=() imports=()
while [ $# -gt 0 ]; do
  case $1 in
    --budget) budget=$2; shift 2;;
    --seconds) seconds=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --time-budget) tb=$2; shift 2;;
    --jobs) jobs=$2; shift 2;;
    --batch-size) batch=$2; shift 2;;
    --import) imports+=("$2"); shift 2;;
    -*) echo "record_replay: unknown option $1" >&2; exit 2;;
    *) names+=("$1"); shift;;
  esac
done
[ ${#names[@]} -gt 0 ] || { echo "record_replay: no problem named" >&2; exit 2; }
for tool in kopt-tune kopt-run python3 xz; do
  command -v $tool >/dev/null || { echo "record_replay: $tool not found on PATH" >&2; exit 2; }
done
mkdir -p "$out/mlir" "$out/logs" "$out/tables"
for t in "${imports[@]}"; do
  xz -dc "$t" > "$out/import.jsonl"
  kopt-tune --db="$out/replay.db" --import="$out/import.jsonl"
done
gen=()
for n in "${names[@]}"; do gen+=(--only "$n"); done
python3 "$here/gen_mlir.py" "$out/mlir" "${gen[@]}" >/dev/null

for n in "${names[@]}"; do
  start=$(date +%s)
  rc=0
  # --time-limit stops between batches; the timeout (a minute later) is a net.
  timeout -s TERM -k 10 $((seconds + 60)) kopt-tune "$out/mlir/$n.mlir" --strategy=random \
    --seed=0 --budget="$budget" --runs="$runs" --time-budget="$tb" --jobs="$jobs" \
    --time-limit="$seconds" --batch-size="$batch" \
    --db="$out/replay.db" --session="replay-$n" --resume --no-progress \
    --log="$out/logs/$n.jsonl" --json="$out/logs/$n.table.json" \
    > "$out/logs/$n.out" 2> "$out/logs/$n.err" || rc=$?
  note=""
  [ $rc = 124 ] || [ $rc = 137 ] && note=" (killed: past --seconds + 60 s; the batch in flight is lost)"
  echo "record_replay: $n: kopt-tune exit $rc after $(( $(date +%s) - start )) s$note"
done

kopt-tune --db="$out/replay.db" --export="$out/all.jsonl" 2>/dev/null
python3 - "$out" "${names[@]}" <<'EOF'
import json, lzma, os, sys
out, names = sys.argv[1], sys.argv[2:]
sessions = {f"replay-{n}": n for n in names}
rows = {n: [] for n in names}
for line in open(os.path.join(out, "all.jsonl")):
    r = json.loads(line)
    n = sessions.get(r.get("session"))
    if n:
        rows[n].append(line)
with open(os.path.join(out, "tables", "README.txt"), "w") as readme:
    for n in names:
        recs = [json.loads(l) for l in rows[n]]
        ok = [r for r in recs if r["status"] == "ok" and r["correct"]]
        with lzma.open(os.path.join(out, "tables", f"{n}.jsonl.xz"), "wt") as f:
            f.writelines(rows[n])
        wl = recs[0]["workload"] if recs else "-"
        best = min((r["median_ms"] for r in ok), default=None)
        msg = f"{n}: {wl}: {len(recs)} trials, {len(ok)} ok and correct, best {best} ms"
        readme.write(msg + "\n")
        print("record_replay:", msg)
EOF
