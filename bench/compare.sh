#!/usr/bin/env bash
# Runs each scenario on both sides back to back -- the LangGraph reference script, then
# stategraph-bench -- ROUNDS times (round-robin, one process per run), and prints the
# medians and the ratio LangGraph / stategraph per scenario.
#
#   bash bench/compare.sh                       # every core scenario, 5 rounds
#   ROUNDS=3 SCENARIOS="chain100 loop10k" bash bench/compare.sh
#
# Environment:
#   LG_BENCH   the LangGraph scenario script (default: bench/langgraph/bench.py). It
#              prints one JSON line per scenario with the field names stategraph-bench
#              uses; see docs/PERFORMANCE.md.
#   LG_VENV    a Python virtual environment with LangGraph (default ~/.venvs/langgraph);
#              created when absent from bench/langgraph/requirements.lock.txt (the
#              versions the table was made with).
#   ROUNDS     runs per scenario and side (default 5).
#   SCENARIOS  which scenarios (default: the six of docs/PERFORMANCE.md).
#   OUT        where the raw JSON lines go (default: a temporary directory, printed).
#   STATEGRAPH_POSTGRES_URL, STATEGRAPH_POSTGRES_TLS_CA
#              the PostgreSQL server (and its CA) of the chain100_ckpt_postgres*
#              scenarios, passed to both sides; required when SCENARIOS names them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

LG_BENCH=${LG_BENCH:-$root/bench/langgraph/bench.py}
LG_VENV=${LG_VENV:-$HOME/.venvs/langgraph}
LG_LOCK=$root/bench/langgraph/requirements.lock.txt
ROUNDS=${ROUNDS:-5}
SCENARIOS=${SCENARIOS:-"chain100 loop10k fanout1k chain100_ckpt_mem chain100_ckpt_sqlite state_big"}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/stategraph-compare.XXXXXX")}
mkdir -p "$OUT"

if [ ! -f "$LG_BENCH" ]; then
  cat >&2 <<EOF
The LangGraph scenario script was not found at $LG_BENCH.
Point LG_BENCH at a bench.py that runs the scenarios of docs/PERFORMANCE.md on
LangGraph ("python bench.py SCENARIO" printing one JSON line with the same field
names as stategraph-bench), then run this script again.
EOF
  exit 2
fi

imports='import langgraph, langgraph.checkpoint.sqlite'
if [[ " $SCENARIOS " == *"_postgres"* ]]; then
  if [ -z "${STATEGRAPH_POSTGRES_URL:-}" ]; then
    echo "SCENARIOS names PostgreSQL scenarios: set STATEGRAPH_POSTGRES_URL=postgres://user:password@host:5432/database (and STATEGRAPH_POSTGRES_TLS_CA to the server's CA)" >&2
    exit 2
  fi
  export STATEGRAPH_POSTGRES_URL
  if [ -n "${STATEGRAPH_POSTGRES_TLS_CA:-}" ]; then export STATEGRAPH_POSTGRES_TLS_CA; fi
  imports="$imports, langgraph.checkpoint.postgres, psycopg"
fi

py="$LG_VENV/bin/python"
if ! "$py" -c "$imports" 2>/dev/null; then
  echo "==> installing the LangGraph environment in $LG_VENV" >&2
  [ -x "$py" ] || python3 -m venv "$LG_VENV"
  "$LG_VENV/bin/pip" install --quiet -r "$LG_LOCK"
fi

echo "==> building stategraph-bench (release)" >&2
cargo build --quiet --release -p stategraph-bench
sg="$root/target/release/stategraph-bench"
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  sg="$CARGO_TARGET_DIR/release/stategraph-bench"
fi
# The round-trip counting proxy the LangGraph side of the PostgreSQL scenarios uses.
export SG_RT_PROXY="$(dirname "$sg")/pg_roundtrip_proxy"

: >"$OUT/langgraph.jsonl"
: >"$OUT/stategraph.jsonl"
echo "==> $ROUNDS rounds of: $SCENARIOS (raw results in $OUT)" >&2
for r in $(seq 1 "$ROUNDS"); do
  for s in $SCENARIOS; do
    printf '    round %s/%s %-22s' "$r" "$ROUNDS" "$s" >&2
    # Extras only stategraph-bench has (e.g. chain100_ckpt_sqlite_normal) are compared
    # with the LangGraph run of their base scenario.
    base=$s
    case $s in
      chain100_ckpt_mem_sync) base=chain100_ckpt_mem ;;
      chain100_ckpt_sqlite_normal) base=chain100_ckpt_sqlite_sync ;;
    esac
    if [ "$base" = "$s" ] || [[ " $SCENARIOS " != *" $base "* ]]; then
      "$py" "$LG_BENCH" "$base" >>"$OUT/langgraph.jsonl"
    fi
    "$sg" "$s" >>"$OUT/stategraph.jsonl"
    echo " done" >&2
  done
done

"$py" - "$OUT/langgraph.jsonl" "$OUT/stategraph.jsonl" <<'EOF'
import json
import platform
import statistics
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(list)
    for line in open(path):
        if line.strip():
            d = json.loads(line)
            runs[d["scenario"]].append(d)
    return runs


lg, sg = load(sys.argv[1]), load(sys.argv[2])

# The headline metric of each scenario (lower is better).
HEADLINE = {
    "chain100": "us_per_superstep",
    "loop10k": "us_per_superstep",
    "fanout1k": "us_per_send",
    "chain100_ckpt_mem": "us_per_superstep",
    "chain100_ckpt_sqlite": "us_per_superstep",
    "state_big": "peak_rss_mib",
    "subgraph_chain": "us_per_invoke",
    "subgraph_chain_ckpt_mem": "us_per_invoke",
    "chain100_ckpt_sqlite_sync": "us_per_superstep",
    "chain100_ckpt_postgres": "us_per_superstep",
    "chain100_ckpt_postgres_sync": "us_per_superstep",
}


def med(rs, key):
    vals = [r[key] for r in rs if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None


def fmt(v, unit=""):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}{unit}"
    if v >= 10:
        return f"{v:.1f}{unit}"
    return f"{v:.2f}{unit}"


def growth(rs, key="us_per_superstep_by_100_block"):
    """Median over runs of: mean of the last 100 steps / mean of the first 100."""
    vals = []
    for r in rs:
        b = r.get(key)
        if b and b[0]:
            vals.append(b[-1] / b[0])
    return statistics.median(vals) if vals else None


v = next(iter(lg.values()))[0].get("versions", {}) if lg else {}
print()
print(f"LangGraph {v.get('langgraph')} (checkpoint {v.get('langgraph-checkpoint')}, "
      f"sqlite {v.get('langgraph-checkpoint-sqlite')}), CPython {v.get('python')}; "
      f"{platform.machine()}, {next(iter(sg.values()))[0].get('cpus') if sg else '?'} cpus")
print()
print("| scenario | metric | LangGraph median | stategraph median | LangGraph / stategraph | runs |")
print("|---|---|---|---|---|---|")
for name in HEADLINE:
    if name not in lg or name not in sg:
        continue
    key = HEADLINE[name]
    a, b = med(lg[name], key), med(sg[name], key)
    ratio = f"{a / b:,.1f}x" if a and b else "-"
    n = f"{len(lg[name])}/{len(sg[name])}"
    print(f"| `{name}` | {key} | {fmt(a)} | {fmt(b)} | {ratio} | {n} |")
    if name.startswith("chain100_ckpt_postgres"):
        a, b = med(lg[name], "round_trips_per_superstep"), med(sg[name], "round_trips_per_superstep")
        print(f"| | round_trips_per_superstep | {fmt(a)} | {fmt(b)} | - | |")
        ta = sorted({str(r.get("transport")) for r in lg[name]})
        tb = sorted({str(r.get("transport")) for r in sg[name]})
        print(f"| | transport | {', '.join(ta)} | {', '.join(tb)} | - | |")
    if name == "chain100_ckpt_sqlite":
        a, b = med(lg[name], "db_bytes"), med(sg[name], "db_bytes")
        ratio = f"{a / b:,.1f}x" if a and b else "-"
        print(f"| | db_bytes | {fmt(a)} | {fmt(b)} | {ratio} | |")
    if name == "state_big":
        for key in ("us_per_superstep", "checkpoints_stored"):
            a, b = med(lg[name], key), med(sg[name], key)
            ratio = f"{a / b:,.1f}x" if a and b and key != "checkpoints_stored" else "-"
            print(f"| | {key} | {fmt(a)} | {fmt(b)} | {ratio} | |")
        a, b = growth(lg[name]), growth(sg[name])
        print(f"| | last 100 steps / first 100 (update events) | {fmt(a)} | {fmt(b)} | - | |")
        b = growth(sg[name], "us_per_superstep_by_100_block_in_node")
        if b is not None:
            print(f"| | last 100 steps / first 100 (timed in the node) | - | {fmt(b)} | - | |")
        b = growth(sg[name], "us_per_superstep_by_100_block_in_node_median")
        if b is not None:
            print(f"| | last 100 steps / first 100 (timed in the node, block medians) | - | {fmt(b)} | - | |")
BASE = {
    "chain100_ckpt_mem_sync": "chain100_ckpt_mem",
    "chain100_ckpt_sqlite_normal": "chain100_ckpt_sqlite_sync",
}
for name in sorted(set(sg) - set(HEADLINE)):
    base = BASE.get(name, name)
    if base not in lg:
        continue
    for key in ("us_per_superstep", "db_bytes", "peak_rss_mib"):
        a, b = med(lg[base], key), med(sg[name], key)
        if a is None or b is None:
            continue
        ratio = f"{a / b:,.1f}x" if a and b else "-"
        label = f"`{name}`" if base == name else f"`{name}` (LangGraph: `{base}`)"
        print(f"| {label} | {key} | {fmt(a)} | {fmt(b)} | {ratio} | {len(lg[base])}/{len(sg[name])} |")
EOF
