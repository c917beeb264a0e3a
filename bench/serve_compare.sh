#!/usr/bin/env bash
# Serving benchmark: many concurrent streaming clients against stategraph-server
# (`serve_bench`) and then against LangGraph's development server (`langgraph dev`),
# back to back, with the same load tool (`serve_load`) and the same graph shape
# (`chain3`: a -> b -> c, each adds 1 to `n` and appends its name to `log`).
# Prints both tables and the ratios. See docs/PERFORMANCE.md, "Serving".
#
#   bash bench/serve_compare.sh
#   CLIENTS="1 100 1000" ROUNDS=3 bash bench/serve_compare.sh
#
# Environment:
#   CLIENTS      client counts, one load run each (default "1 100 1000")
#   ROUNDS       rounds, each on newly started servers; the tables show medians
#                (default 1)
#   MODE         stream | wait (default stream)
#   JOBS         stategraph-server's jobs (runs at once; default: serve_bench's)
#   SG_DB_DIR    where stategraph-server's SQLite file of each round is made (default:
#                serve_bench's temporary directory on disk; /dev/shm shows the cost
#                without fsync)
#   LG_JOBS      langgraph dev --n-jobs-per-worker (default 10, the default its --help
#                names; without the flag the in-memory runtime starts 1 job)
#   LG_DEV_VENV  a virtual environment with `langgraph-cli[inmem]` (default
#                /tmp/lg-dev-venv); the LangGraph side is skipped when it is missing
#                (create it: python3 -m venv $LG_DEV_VENV &&
#                $LG_DEV_VENV/bin/pip install "langgraph-cli[inmem]")
#   LG_PORT      langgraph dev's port on 127.0.0.1 (default: a free one);
#                serve_bench takes a free port itself
#   OUT          where the raw JSON lines and server logs go (default: a temporary
#                directory, printed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CLIENTS=${CLIENTS:-"1 100 1000"}
ROUNDS=${ROUNDS:-1}
MODE=${MODE:-stream}
LG_JOBS=${LG_JOBS:-10}
LG_DEV_VENV=${LG_DEV_VENV:-/tmp/lg-dev-venv}
LG_PORT=${LG_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/stategraph-serve.XXXXXX")}
mkdir -p "$OUT"
: >"$OUT/results.jsonl"

# 1,000 clients hold 1,000 sockets in the load tool and as many in the server.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "==> open files limit: $(ulimit -n); raw results in $OUT" >&2

echo "==> building serve_bench and serve_load (release)" >&2
CARGO_INCREMENTAL=0 cargo build --quiet --release -p stategraph-bench --bins
bin="${CARGO_TARGET_DIR:-$root/target}/release"

server_pid=
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  server_pid=
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

# Waits until GET /ok answers at base URL $1 (up to $2 seconds).
wait_ok() {
  for _ in $(seq 1 $(($2 * 5))); do
    if curl -sf "$1/ok" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
    sleep 0.2
  done
  return 1
}

# Runs the load at every client count against base URL $1, labelled $2 (round $3).
load() {
  # Warm-up (not recorded): the first runs pay lazy imports, caches, connections.
  "$bin/serve_load" --url "$1" --clients 10 --mode "$MODE" \
    --label "$2 (warm-up)" >/dev/null 2>&1 || true
  for c in $CLIENTS; do
    echo "    $2: $c clients, round $3/$ROUNDS" >&2
    "$bin/serve_load" --url "$1" --clients "$c" --mode "$MODE" \
      --label "$2" --json >>"$OUT/results.jsonl" 2>>"$OUT/load-$2.log" || true
  done
}

# One round on a new stategraph-server (a new SQLite file).
round_stategraph() {
  local sg_args=(--port 0) db_dir=
  if [ -n "${JOBS:-}" ]; then sg_args+=(--jobs "$JOBS"); fi
  if [ -n "${SG_DB_DIR:-}" ]; then
    db_dir=$(mktemp -d "$SG_DB_DIR/serve-bench.XXXXXX")
    sg_args+=(--db "$db_dir/serve-bench.sqlite")
  fi
  "$bin/serve_bench" "${sg_args[@]}" >"$OUT/serve_bench-$1.log" 2>&1 &
  server_pid=$!
  local url=
  for _ in $(seq 1 150); do
    url=$(grep -o 'http://[0-9.:]*' "$OUT/serve_bench-$1.log" 2>/dev/null || true)
    if [ -n "$url" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  if [ -n "$url" ] && wait_ok "$url" 30; then
    echo "==> stategraph-server (serve_bench): $(tail -1 "$OUT/serve_bench-$1.log")" >&2
    load "$url" stategraph "$1"
  else
    echo "serve_bench did not start; see $OUT/serve_bench-$1.log" >&2
  fi
  stop_server
  if [ -n "$db_dir" ]; then rm -rf "$db_dir"; fi
}

# One round on a new `langgraph dev` (empty in-memory runtime).
round_langgraph() {
  echo "==> langgraph dev on 127.0.0.1:$LG_PORT (--n-jobs-per-worker $LG_JOBS)" >&2
  # A fresh copy per round: `langgraph dev` keeps its in-memory data in
  # .langgraph_api/ beside the config (and reloads it at start), which this way
  # stays out of the repository and out of the next round.
  local dir="$OUT/lg-serve-$1"
  mkdir -p "$dir"
  cp bench/langgraph/serve/graph.py bench/langgraph/serve/langgraph.json "$dir/"
  # Offline and quiet: no CLI analytics, no version check on PyPI, no LangSmith
  # tracing, no browser, no reloader; per-request info logs off (they cost CPU).
  (
    cd "$dir"
    exec env LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
      LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false LOG_LEVEL=WARNING \
      "$LG_DEV_VENV/bin/langgraph" dev --no-browser --no-reload --port "$LG_PORT" \
      --n-jobs-per-worker "$LG_JOBS" --server-log-level warning
  ) >"$OUT/langgraph_dev-$1.log" 2>&1 &
  server_pid=$!
  if wait_ok "http://127.0.0.1:$LG_PORT" 120; then
    load "http://127.0.0.1:$LG_PORT" langgraph "$1"
  else
    echo "langgraph dev did not start; see $OUT/langgraph_dev-$1.log" >&2
  fi
  stop_server
  rm -rf "$dir"
}

lg=
if [ -x "$LG_DEV_VENV/bin/langgraph" ]; then
  lg=1
else
  echo "==> no $LG_DEV_VENV/bin/langgraph: LangGraph side skipped" >&2
fi
# Each round starts both servers afresh, so data left by earlier rounds (stored
# runs, events, checkpoints) does not weigh on later ones.
for r in $(seq 1 "$ROUNDS"); do
  round_stategraph "$r"
  if [ -n "$lg" ]; then round_langgraph "$r"; fi
done

python3 - "$OUT/results.jsonl" <<'PY'
import json
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)
for line in open(sys.argv[1]):
    if line.strip():
        d = json.loads(line)
        rows[(d["label"], d["clients"])].append(d)

KEYS = ["failures", "ttfe_p50_ms", "ttfe_p99_ms", "run_p50_ms", "run_p99_ms", "runs_per_s"]


def med(rs, k):
    vals = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(vals) if vals else None


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


print()
print("| server | clients | runs | failures | TTFE p50 (ms) | TTFE p99 (ms) | run p50 (ms) | run p99 (ms) | runs/s |")
print("|---|---|---|---|---|---|---|---|---|")
for (label, clients), rs in sorted(rows.items()):
    m = {k: med(rs, k) for k in KEYS}
    runs = sum(r["runs"] for r in rs)
    fails = sum(r["failures"] for r in rs)
    print(f"| {label} | {clients} | {runs} | {fails} | " + " | ".join(fmt(m[k]) for k in KEYS[1:]) + " |")

clients = sorted({c for (_, c) in rows})
if any(l == "langgraph" for (l, _) in rows) and any(l == "stategraph" for (l, _) in rows):
    print()
    print("| clients | runs/s (stategraph / LangGraph) | run p50 (LangGraph / stategraph) | run p99 (LangGraph / stategraph) | TTFE p50 (LangGraph / stategraph) |")
    print("|---|---|---|---|---|")
    for c in clients:
        s, l = rows.get(("stategraph", c)), rows.get(("langgraph", c))
        if not s or not l:
            continue
        def ratio(a, b):
            return f"{a / b:,.1f}x" if a and b else "-"
        print(f"| {c} | {ratio(med(s, 'runs_per_s'), med(l, 'runs_per_s'))} | "
              f"{ratio(med(l, 'run_p50_ms'), med(s, 'run_p50_ms'))} | "
              f"{ratio(med(l, 'run_p99_ms'), med(s, 'run_p99_ms'))} | "
              f"{ratio(med(l, 'ttfe_p50_ms'), med(s, 'ttfe_p50_ms'))} |")
PY
