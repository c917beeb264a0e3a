#!/usr/bin/env bash
# The scale curves: runs every point on both sides back to back (stategraph-bench, then
# the LangGraph script), one process per point, and appends one JSON line per point to
# $OUT/stategraph.jsonl and $OUT/langgraph.jsonl. Then
#   cargo run --release -p stategraph-bench --bin plot_curves -- $OUT docs/perf
# draws the charts and prints the tables (docs/PERFORMANCE.md, "Scale curves").
#
#   bash bench/curves.sh                              # every curve
#   CURVES="steps fanout" bash bench/curves.sh        # some of them
#
# Environment:
#   OUT          where the JSON lines go (default bench/results/curves); appended to.
#   CURVES       which curves: any of steps fanout threads_sqlite threads_postgres
#                (default: all four).
#   SIDES        which sides (default "stategraph langgraph").
#   SG_ROUNDS    runs of each long-thread and fan-out point on our side (default 3;
#                the plotter takes the run with the median time). LangGraph's side runs
#                each point once (minutes per point).
#   LG_VENV      the LangGraph environment (default /tmp/lg-subx-venv; PostgreSQL
#                curves need langgraph-checkpoint-postgres and psycopg in it).
#   LG_TIMEOUT   seconds a LangGraph point may run (default 600); a point stopped by it
#                is recorded as {"status": "timeout", …} with the progress it reported.
#   SG_THREADS   threads of the many-threads curve on our side (default 10000).
#   LG_THREADS   the same on LangGraph's side (default 1000: throughput is a rate).
#   MEM_LIMIT_KIB  address-space limit of every point (default 8 GiB): a point that
#                would need more fails instead of swapping the shared machine.
#   STATEGRAPH_POSTGRES_URL, STATEGRAPH_POSTGRES_TLS_CA   the PostgreSQL curves' server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

OUT=${OUT:-$root/bench/results/curves}
CURVES=${CURVES:-"steps fanout threads_sqlite threads_postgres"}
SIDES=${SIDES:-"stategraph langgraph"}
SG_ROUNDS=${SG_ROUNDS:-3}
LG_VENV=${LG_VENV:-/tmp/lg-subx-venv}
LG_TIMEOUT=${LG_TIMEOUT:-600}
SG_THREADS=${SG_THREADS:-10000}
LG_THREADS=${LG_THREADS:-1000}
MEM_LIMIT_KIB=${MEM_LIMIT_KIB:-8388608}
mkdir -p "$OUT"
py="$LG_VENV/bin/python"
lg_bench="$root/bench/langgraph/bench.py"

echo "==> building stategraph-bench (release)" >&2
CARGO_INCREMENTAL=0 cargo build --quiet --release -p stategraph-bench
sg="${CARGO_TARGET_DIR:-$root/target}/release/stategraph-bench"

# run SIDE FILE TIMEOUT SCENARIO SIZE COMMAND...: one point; a failure or timeout
# becomes a JSON line saying so (with the last `progress STEPS SECONDS` the point
# printed on stderr).
run() {
  local side=$1 file=$2 limit=$3 scenario=$4 size=$5
  shift 5
  local err rc=0 line
  err=$(mktemp)
  printf '    %-10s %s ' "$side" "$*" >&2
  line=$( (ulimit -v "$MEM_LIMIT_KIB"; timeout "$limit" "$@") 2>"$err") || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "$line" >>"$file"
    echo "ok" >&2
  else
    local status=failed
    [ "$rc" -eq 124 ] && status=timeout
    python3 - "$status" "$limit" "$err" "$scenario" "$size" >>"$file" <<'EOF'
import json, sys
status, limit, err, scenario, size = sys.argv[1:6]
text = open(err).read()
progress = [l.split() for l in text.splitlines() if l.startswith("progress ")]
line = {"scenario": scenario, "size": int(size), "status": status, "limit_s": float(limit)}
if progress:
    steps, secs = int(progress[-1][1]), float(progress[-1][2])
    line.update(progress_steps=steps, progress_s=secs, progress_us_per_step=secs / steps * 1e6)
if status == "failed":
    line["error"] = text.strip().splitlines()[-1][:300] if text.strip() else ""
print(json.dumps(line))
EOF
    echo "$status" >&2
  fi
  rm -f "$err"
}

point() { # point ROUNDS SCENARIO SIZE [THREADS_SG THREADS_LG]
  local rounds=$1 s=$2 n=$3
  if [[ " $SIDES " == *" stategraph "* ]]; then
    for _ in $(seq 1 "$rounds"); do
      run stategraph "$OUT/stategraph.jsonl" 3600 "$s" "$n" "$sg" "$s" "$n" ${4:+"$4"}
    done
  fi
  if [[ " $SIDES " == *" langgraph "* ]]; then
    run langgraph "$OUT/langgraph.jsonl" "$LG_TIMEOUT" "$s" "$n" "$py" "$lg_bench" "$s" "$n" ${5:+"$5"}
  fi
}

for curve in $CURVES; do
  echo "==> $curve (raw results in $OUT)" >&2
  case $curve in
    steps)
      for n in 1000 10000 100000 1000000; do
        point "$SG_ROUNDS" curve_steps_mem "$n"
        point "$SG_ROUNDS" curve_steps_sqlite "$n"
      done ;;
    fanout)
      for n in 1000 10000 100000; do point "$SG_ROUNDS" curve_fanout "$n"; done ;;
    threads_sqlite | threads_postgres)
      for r in 1 2 4 8 16; do point 1 "curve_$curve" "$r" "$SG_THREADS" "$LG_THREADS"; done
      for r in 1 16; do point 1 "curve_${curve}_sync" "$r" "$SG_THREADS" "$LG_THREADS"; done ;;
    *) echo "unknown curve $curve" >&2; exit 2 ;;
  esac
done
