#!/usr/bin/env bash
# What #[derive(GraphState)] costs the compiler for a 50-field state: builds a
# throwaway crate twice -- the struct with the derive, and with plain derives only --
# and prints rustc's macro-expansion and type-check times (from -Z time-passes, enabled
# on the stable compiler with RUSTC_BOOTSTRAP for this measurement only) and the
# wall time of each `cargo build`.
#
#   bash bench/macro_cost.sh        # 5 builds of each, medians
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/stategraph-macro-cost.XXXXXX")
trap 'rm -rf "$work"' EXIT

fields() {
  for i in $(seq 0 49); do
    case $((i % 5)) in
      0) echo "    f$i: String," ;;
      1) printf '    #[reducer(add)]\n    f%s: u64,\n' "$i" ;;
      2) printf '    #[reducer(append)]\n    f%s: Vec<String>,\n' "$i" ;;
      3) printf '    #[reducer(merge)]\n    f%s: std::collections::BTreeMap<String, u32>,\n' "$i" ;;
      4) echo "    f$i: Option<f64>," ;;
    esac
  done
}

make_crate() { # name, derive line
  mkdir -p "$work/$1/src"
  cat >"$work/$1/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
stategraph = { path = "$root/graph" }
serde = { version = "1", features = ["derive"] }

[workspace]
TOML
  {
    echo "#![allow(dead_code, unused_imports)]"
    echo "use stategraph::prelude::*;"
    echo "$2"
    echo "pub struct Wide {"
    fields
    echo "}"
  } >"$work/$1/src/lib.rs"
}

make_crate with_derive "#[derive(GraphState, Clone, Debug, Default)]"
# The same struct without GraphState (reducer attributes need the derive, so they are
# stripped here).
make_crate plain "#[derive(Clone, Debug, Default)]"
sed -i '/#\[reducer/d' "$work/plain/src/lib.rs"

export CARGO_TARGET_DIR="$work/target"
measure() { # crate
  local crate=$1 expand=() check=() wall=()
  (cd "$work/$crate" && cargo build -q)
  for _ in $(seq 1 "$RUNS"); do
    touch "$work/$crate/src/lib.rs"
    local t0 t1 out
    t0=$(date +%s.%N)
    out=$(cd "$work/$crate" && RUSTC_BOOTSTRAP=1 cargo rustc -q -- -Z time-passes 2>&1)
    t1=$(date +%s.%N)
    expand+=("$(awk '/macro_expand_crate/{print $2}' <<<"$out" | tr -d ';')")
    check+=("$(awk '/type_check_crate/{print $2}' <<<"$out" | tr -d ';')")
    wall+=("$(echo "$t1 - $t0" | bc)")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  printf '%-12s macro_expand %6.3f s   type_check %6.3f s   cargo build %6.2f s\n' \
    "$crate" "$(median "${expand[@]}")" "$(median "${check[@]}")" "$(median "${wall[@]}")"
}
measure with_derive
measure plain
