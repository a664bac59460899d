#!/usr/bin/env bash
# A short run of every fuzz target (SECONDS_PER_TARGET, default 15, two at a
# time), for CI via scripts/test.sh: builds the targets unoptimized (a dev
# build takes a fraction of the release build's time; debug assertions and
# overflow checks are on), installing cargo-fuzz into target/tools if
# missing, seeds the corpora from conformance/ and fails if any target
# crashes or does not finish its run. The long runs are scripts/fuzz.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../fuzz/lib.sh"
PER="${SECONDS_PER_TARGET:-15}"
started=$(date +%s)
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
CORPUS="$logs/corpus"
ensure_cargo_fuzz
installed=$(date +%s)
build_targets --dev
built=$(date +%s)
pids=()
for t in "${TARGETS[@]}"; do
  run_target "$t" "$logs/$t.log" -max_total_time="$PER" &
  pids+=("$!")
  if [ "${#pids[@]}" -ge 2 ]; then
    wait "${pids[0]}" || true
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || true; done
status=0
for t in "${TARGETS[@]}"; do
  read -r execs cov ft crashes < <(summarize "$logs/$t.log")
  echo "fuzz-smoke: $t: $execs execs, cov $cov, ft $ft, crashes $crashes"
  if [ "$crashes" != "0" ] || ! grep -q 'Done [0-9]* runs' "$logs/$t.log"; then
    status=1
    echo "fuzz-smoke: $t FAILED; its log:" >&2
    tail -40 "$logs/$t.log" >&2
  fi
done
now=$(date +%s)
echo "fuzz-smoke: $((now - started)) s in all (cargo-fuzz install $((installed - started)) s, build $((built - installed)) s, runs $((now - built)) s); $( [ $status = 0 ] && echo ok || echo FAILED )"
exit "$status"
