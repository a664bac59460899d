#!/usr/bin/env bash
# Lens speed against its goals (issue 14), with ratios measured in one run so
# that a shared, noisy machine does not decide the result:
#
#   1. whole process: `parley lens --ndjson` over the 16 reference replies
#      (bench/inputs.json) x 20,000 lines, an earlier binary against this
#      tree's, both timed by hyperfine in the same run, after checking that
#      their outputs are byte-identical. Goal: this tree's loses >= 30% of
#      the earlier binary's time (what 5x the TypeScript reference needs).
#   2. instruction counts of the same two binaries on a smaller input
#      (valgrind; robust to other load on the machine), and their ratio.
#   3. in process: the criterion bench's Lens of the 16 replies, ops/s
#      (goal >= 296,000, 10x the recorded TypeScript figure).
#
# usage: scripts/bench-lens.sh [--before BIN | --before-ref REF] [--after BIN]
#                              [--runs N] [--lines N] [--no-criterion] [--no-valgrind]
#   --before BIN      the earlier binary (default: target/parley-before)
#   --after BIN       this tree's binary, already built (default: build it)
#   --before-ref REF  build the earlier binary from git REF (e.g. main) first,
#                     in a temporary worktree with its own target directory
# Needs hyperfine and valgrind (scripts/setup.sh installs them) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

before="$root/target/parley-before"
before_ref=""
after=""
runs=10
lines=20000
criterion=1
grind=1
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before=$2; shift 2 ;;
    --before-ref) before_ref=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --no-criterion) criterion=0; shift ;;
    --no-valgrind) grind=0; shift ;;
    *) echo "bench-lens: unknown option $1" >&2; exit 2 ;;
  esac
done

for tool in hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "bench-lens: $tool is missing (scripts/setup.sh)" >&2; exit 2; }
done

work="$root/target/bench-lens"
mkdir -p "$work"
echo "== machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ -n "$before_ref" ]; then
  tree="$work/before-tree"
  rm -rf "$tree"
  git worktree add --detach "$tree" "$before_ref" >/dev/null
  echo "== building the earlier binary from $before_ref ($(git rev-parse --short "$before_ref"))"
  (cd "$tree" && CARGO_TARGET_DIR="$work/before-target" cargo build -q --profile bench -p parley-cli)
  cp "$work/before-target/release/parley" "$work/parley-before"
  git worktree remove --force "$tree"
  before="$work/parley-before"
fi
[ -x "$before" ] || { echo "bench-lens: no earlier binary at $before (use --before or --before-ref)" >&2; exit 2; }

if [ -z "$after" ]; then
  echo "== building this tree's parley (profile bench)"
  cargo build -q --profile bench -p parley-cli
  after="$root/target/release/parley"
fi
cp "$after" "$work/parley-after"
after="$work/parley-after"

# The input: each reply as one compact line, the 16 of them repeated.
make_input() { # $1 = repetitions, $2 = file
  python3 - "$1" "$2" <<'PY'
import json, sys
reps, path = int(sys.argv[1]), sys.argv[2]
replies = json.load(open("bench/inputs.json"))["replies"]
block = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in replies)
with open(path, "w", encoding="utf-8") as f:
    for _ in range(reps):
        f.write(block)
PY
}
input="$work/replies-x$lines.ndjson"
[ -s "$input" ] || make_input "$lines" "$input"
echo "== input: 16 replies x $lines lines, $(( $(stat -c %s "$input") / 1000000 )) MB"

"$before" lens --ndjson "$input" > "$work/out-before.ndjson"
"$after" lens --ndjson "$input" > "$work/out-after.ndjson"
if ! cmp -s "$work/out-before.ndjson" "$work/out-after.ndjson"; then
  echo "bench-lens: the two binaries' outputs differ; refusing to compare their speed" >&2
  cmp "$work/out-before.ndjson" "$work/out-after.ndjson" >&2 || true
  exit 1
fi
echo "   outputs are byte-identical ($(wc -l < "$work/out-after.ndjson") lines)"

echo "== whole process, hyperfine, $runs runs each, same run"
hyperfine --style basic --warmup 1 --runs "$runs" --export-json "$work/hyperfine.json" \
  -n before "$before lens --ndjson $input" \
  -n after "$after lens --ndjson $input"
python3 - "$work/hyperfine.json" <<'PY'
import json, statistics, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, a = r["before"], r["after"]
wall_b, wall_a = statistics.median(b["times"]), statistics.median(a["times"])
cpu_b = b["user"] + b["system"]
cpu_a = a["user"] + a["system"]
print(f"   median wall: before {wall_b:.3f} s, after {wall_a:.3f} s -> after/before {wall_a / wall_b:.3f}"
      f" ({(1 - wall_a / wall_b) * 100:.1f}% less time; goal >= 30%)")
print(f"   mean CPU (user+sys): before {cpu_b:.3f} s, after {cpu_a:.3f} s -> after/before {cpu_a / cpu_b:.3f}"
      f" ({(1 - cpu_a / cpu_b) * 100:.1f}% less)")
print(f"   at the issue's reference point (ours 0.77 s, TypeScript 2.68 s): {0.77 * wall_a / wall_b:.2f} s,"
      f" {2.68 / (0.77 * wall_a / wall_b):.1f}x TypeScript (goal >= 5x)")
PY

if [ "$grind" = 1 ] && command -v valgrind >/dev/null; then
  small="$work/replies-x1000.ndjson"
  [ -s "$small" ] || make_input 1000 "$small"
  echo "== instructions (valgrind), 16 replies x 1000 lines"
  count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" lens --ndjson "$small" 2>&1 >/dev/null \
      | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
  }
  ib=$(count "$before"); ia=$(count "$after")
  python3 -c "b, a = $ib, $ia; print(f'   before {b:,}, after {a:,} -> after/before {a / b:.3f} ({(1 - a / b) * 100:.1f}% fewer)')"
fi

if [ "$criterion" = 1 ]; then
  echo "== in process, criterion (cargo bench -p parley-core --bench core)"
  cargo bench -q -p parley-core --bench core -- "lens of 16 replies" 2>&1 \
    | grep -E "^\(a\)|lens of 16 replies|time:|== ours" || true
fi
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
