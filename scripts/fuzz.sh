#!/usr/bin/env bash
# Runs every fuzz target for MINUTES (default 10) each, JOBS (default 2) at a
# time, from seeds extracted from conformance/ plus the corpus kept from
# earlier runs. Prints a table of executions, coverage (cov/ft, libFuzzer's
# final figures), crashes, CPU seconds (user+sys of the fuzzer) and wall
# seconds; logs in fuzz/logs/. Exits 1 if any target crashed (the input is in
# fuzz/artifacts/<target>/).
# Usage: scripts/fuzz.sh [MINUTES]   (not part of CI; see scripts/fuzz-smoke.sh)
# Environment:
#   TARGETS="a b"     run only these targets (default: all of them)
#   JOBS=N            targets run at a time (default 2)
#   CPU_SECONDS=S     stop each target once it has used S CPU seconds rather
#                     than after MINUTES of wall time, which a loaded machine
#                     stretches; MINUTES (default 60 then) stays a wall-time
#                     cap. For comparable figures on a shared machine:
#                       CPU_SECONDS=600 JOBS=1 scripts/fuzz.sh
ONLY="${TARGETS:-}"
source "$(dirname "${BASH_SOURCE[0]}")/../fuzz/lib.sh"
if [ -n "$ONLY" ]; then
  read -ra wanted <<<"$ONLY"
  for t in "${wanted[@]}"; do
    case " ${TARGETS[*]} " in
      *" $t "*) ;;
      *) echo "fuzz: unknown target $t (known: ${TARGETS[*]})" >&2; exit 2 ;;
    esac
  done
  TARGETS=("${wanted[@]}")
fi
CPU_SECONDS="${CPU_SECONDS:-}"
if [ -n "$CPU_SECONDS" ]; then
  MINUTES="${1:-60}"
else
  MINUTES="${1:-10}"
fi
JOBS="${JOBS:-2}"
SECS=$((MINUTES * 60))
ensure_cargo_fuzz
build_targets
mkdir -p "$FUZZ/logs"
run_one() {
  local t="$1"
  local TIMEFORMAT='%U %S %R'
  { time run_target "$t" "$FUZZ/logs/$t.log" -max_total_time="$SECS" || true; } 2>"$FUZZ/logs/$t.cpu"
}
running=0
for t in "${TARGETS[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
status=0
printf '%-16s %14s %7s %8s %8s %7s %7s\n' target execs cov ft crashes cpu_s wall_s
for t in "${TARGETS[@]}"; do
  read -r execs cov ft crashes < <(summarize "$FUZZ/logs/$t.log")
  cpu=$(awk '{printf "%.0f", $1+$2}' "$FUZZ/logs/$t.cpu" 2>/dev/null || echo "?")
  wall=$(awk '{printf "%.0f", $3}' "$FUZZ/logs/$t.cpu" 2>/dev/null || echo "?")
  printf '%-16s %14s %7s %8s %8s %7s %7s\n' "$t" "$execs" "$cov" "$ft" "$crashes" "$cpu" "$wall"
  [ "$crashes" = "0" ] || status=1
done
exit "$status"
