#!/usr/bin/env bash
# CPU time a callback server spends per call, read from the kernel's
# per-thread accounting (/proc/PID/task/*/schedstat), against splice, a
# server that decodes nothing and copies the request's serialized properties
# and options into its answer. On a loaded machine this moves far less than
# wall-clock latency, which includes waiting for a core: it is what to
# compare when p50 ratios are noise.
#
# It runs bench/peers one call at a time with the targets splice,
# ours-unread (bench/ours -unread) and ours, the ratios taken against
# splice: the "CPU µs/call" and "CPU ÷ splice's" columns.
#
#   bench/cpucost.sh                                # about 1.5 minutes on 2 cores
#   go build -o /tmp/ours-before ./bench/ours       # in a checkout of an older commit
#   BEFORE=/tmp/ours-before ROUNDS=5 bench/cpucost.sh
#
# Knobs: PAYLOADS (sizes, comma- or space-separated; small,medium,large),
# ROUNDS (3), WINDOW (per target, size and round; 2s), BEFORE (optional: an
# older bench/ours binary, measured with -unread as before-unread). More
# arguments go to the driver. Linux only.
set -euo pipefail
cd "$(dirname "$0")/.."
payloads=${PAYLOADS:-small,medium,large}
args=(-targets splice,ours-unread,ours -baseline splice -conc 1
      -sizes "${payloads// /,}" -rounds "${ROUNDS:-3}" -window "${WINDOW:-2s}")
if [ -n "${BEFORE:-}" ]; then
  args+=(-program "before-unread=$BEFORE -unread")
fi
exec go run ./bench/peers "${args[@]}" "$@"
