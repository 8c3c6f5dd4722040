#!/usr/bin/env bash
# CPU time a callback server spends per call, read from the kernel's
# per-thread accounting (/proc/PID/task/*/schedstat, nanoseconds), for
# targets the shared harness's driver calls over loopback. On a loaded
# machine this moves far less than wall-clock latency, which includes
# waiting for a core: it is what to compare when p50 ratios are noise.
#
#   go build -o /tmp/ours ./bench/ours
#   (cd ../shared/bench && go build -o bin/driver ./driver && go build -o bin/echo ./echo)
#   BENCH=../shared/bench bench/cpucost.sh
#
# Knobs: BENCH (a harness folder with bin/driver and bin/echo built), OURS
# (the bench/ours binary), BEFORE (optional: an older bench/ours binary,
# measured with -unread as before-unread), PAYLOADS, ROUNDS, CALLS (per call
# of the driver; large payloads get a tenth). Each round starts every target afresh, in
# turn, so that drift spreads over all of them. Linux only.
set -euo pipefail
BENCH=${BENCH:?set BENCH to a built copy of the shared harness}
OURS=${OURS:-/tmp/ours}
PAYLOADS=${PAYLOADS:-small medium large}
ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A cmd=(
  [echo-splice]="$BENCH/bin/echo -mode splice"
  [ours-unread]="$OURS -unread"
  [ours]="$OURS"
)
targets=(echo-splice ours-unread ours)
if [ -n "${BEFORE:-}" ]; then
  cmd[before-unread]="$BEFORE -unread"
  targets+=(before-unread)
fi

cpu_ns() { # total on-CPU time of all threads of PID
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'
}

for p in $PAYLOADS; do
  n=$CALLS
  [ "$p" = large ] && n=$((CALLS / 10))
  for r in $(seq "$ROUNDS"); do
    for i in "${!targets[@]}"; do
      t=${targets[$(( (i + r) % ${#targets[@]} ))]}
      out="$tmp/$t.out"
      : > "$out"
      # Without PULUMI_MONITOR both programs print "ADDR TOKEN" and serve.
      env -u PULUMI_MONITOR ${cmd[$t]} > "$out" 2>/dev/null &
      pid=$!
      for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
      read -r addr token < "$out"
      before=$(cpu_ns "$pid")
      "$BENCH/bin/driver" -target "$t=addr:$addr/$token" -payloads "$p" -conc 1 -n "$n" -rounds 1 -warmup 0 > "$tmp/driver.out" 2>&1 ||
        { cat "$tmp/driver.out"; kill "$pid"; exit 1; }
      after=$(cpu_ns "$pid")
      kill "$pid"; wait "$pid" 2>/dev/null || true
      echo "$p $t $r $(( (after - before) / n ))"
    done
  done
done | tee "$tmp/all" >&2
echo
echo "| payload | target | server CPU per call (median of $ROUNDS rounds) | vs echo-splice |"
echo "|---|---|--:|--:|"
for p in $PAYLOADS; do
  base=$(awk -v p="$p" '$1==p && $2=="echo-splice" {print $4}' "$tmp/all" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  for t in "${targets[@]}"; do
    m=$(awk -v p="$p" -v t="$t" '$1==p && $2==t {print $4}' "$tmp/all" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    awk -v p="$p" -v t="$t" -v m="$m" -v b="$base" 'BEGIN {printf "| %s | %s | %.1f µs | %.2fx |\n", p, t, m/1000, m/b}'
  done
done
