#!/usr/bin/env bash
# What the program's entry point costs the engine, under the real `pulumi up`.
#
# Three programs register the same component resources (500, or RESOURCES)
# behind one stack transform that tags each of them:
#   sdkonly  bench/entrypoint/sdkonly: pulumi.Run and the SDK's RegisterResourceTransform
#   monitor  bench/entrypoint/monitor: pulumi.Run, program.Monitor, transforms.RegisterStack
#   old      optional: a prebuilt binary given as the first argument, e.g. the
#            same program on an older entry point (for state sizes that compare,
#            built from a main package whose folder name has 7 letters too)
# Each is built with the Go language host's flags (-trimpath -ldflags "-w -s")
# and run as a prebuilt binary (runtime.options.binary), so no compile time
# is measured. Every round deploys each program in turn to a fresh stack of
# the same project, in a file backend, and records:
#   frames   entries of "stackTrace" per resource in `pulumi stack export`
#            (min-max over the resources)
#   state    bytes of the stack's checkpoint file after the update
#   cpu      user+sys seconds of `pulumi up` and all its children
#            (CLI, language host, program), from /usr/bin/time
#   program  user+sys seconds of the program's process alone (the project
#            runs it through a wrapper under /usr/bin/time), part of cpu
# and prints, per program, the median and range of each and the ratio of the
# medians of cpu to sdkonly's. Compare ratios only: absolute times move with the load.
#
#   bin=$(../shared/engine/install.sh "$HOME/.cache/pulumi-engine"); export PATH="$bin:$PATH"
#   bench/entrypoint.sh [OLD_BINARY]        # ROUNDS=3 RESOURCES=500
#
# Needs pulumi and pulumi-language-go on PATH, go, and GNU time at /usr/bin/time.
# Nothing leaves the machine: the backend, PULUMI_HOME and the projects live
# in a temporary folder, removed at the end (KEEP=1 keeps it).
set -euo pipefail
ROUNDS=${ROUNDS:-3}
RESOURCES=${RESOURCES:-500}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "keeping $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi

for tool in pulumi pulumi-language-go go; do
  command -v "$tool" >/dev/null || { echo "entrypoint.sh: $tool is not on PATH" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "entrypoint.sh: GNU time is not at /usr/bin/time" >&2; exit 2; }

mkdir -p "$tmp/bin"
targets=(sdkonly monitor)
(cd "$root" &&
  go build -trimpath -ldflags "-w -s" -o "$tmp/bin/sdkonly" ./bench/entrypoint/sdkonly &&
  go build -trimpath -ldflags "-w -s" -o "$tmp/bin/monitor" ./bench/entrypoint/monitor &&
  go build -o "$tmp/bin/stateinfo" ./bench/entrypoint/stateinfo)
if [ $# -gt 0 ]; then
  cp "$1" "$tmp/bin/old"
  targets+=(old)
fi

export PULUMI_HOME="$tmp/home"
export PULUMI_BACKEND_URL="file://$tmp/backend"
export PULUMI_CONFIG_PASSPHRASE=entrypoint
export PULUMI_SKIP_UPDATE_CHECK=1
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export ENTRYPOINT_RESOURCES=$RESOURCES
mkdir -p "$tmp/home" "$tmp/backend"

# One project folder per program, all at the same depth and with the same
# project name, so that URNs and the source positions of frames (relative to
# the project folder) have the same length whatever the program.
for t in "${targets[@]}"; do
  mkdir -p "$tmp/proj/$t"
  cat >"$tmp/proj/$t/Pulumi.yaml" <<EOF
name: entrypoint
runtime:
  name: go
  options:
    binary: $tmp/bin/$t.sh
EOF
  cat >"$tmp/bin/$t.sh" <<EOF
#!/bin/sh
exec /usr/bin/time -f "%U %S" -o "$tmp/progtime" "$tmp/bin/$t" "\$@"
EOF
  chmod +x "$tmp/bin/$t.sh"
done

# Stack names of one length too: s<round>-<first letter of the program>.
for round in $(seq 1 "$ROUNDS"); do
  for t in "${targets[@]}"; do
    stack="s$round-${t:0:1}"
    cd "$tmp/proj/$t"
    rm -f "$tmp/progtime"
    pulumi stack init "$stack" --non-interactive >"$tmp/init.log" 2>&1 || { cat "$tmp/init.log" >&2; exit 1; }
    if ! /usr/bin/time -f "%U %S" -o "$tmp/time" \
      pulumi up --yes --non-interactive --skip-preview --stack "$stack" >"$tmp/up.log" 2>&1; then
      cat "$tmp/up.log" >&2
      exit 1
    fi
    cpu=$(awk 'END {printf "%.2f", $1 + $2}' "$tmp/time")
    prog=$(awk 'END {printf "%.2f", $1 + $2}' "$tmp/progtime")
    pulumi stack export --stack "$stack" >"$tmp/export-$stack.json"
    read -r n lo hi < <("$tmp/bin/stateinfo" <"$tmp/export-$stack.json")
    [ "$n" -eq "$RESOURCES" ] || { echo "entrypoint.sh: $t: $n resources in the state, want $RESOURCES" >&2; exit 1; }
    size=$(stat -c %s "$tmp/backend/.pulumi/stacks/entrypoint/$stack.json")
    echo "$t $round $cpu $lo $hi $size $prog" >>"$tmp/results"
    echo "round $round $t: cpu ${cpu}s (program ${prog}s) frames $lo-$hi state $size B" >&2
    pulumi stack rm "$stack" --yes --force --non-interactive >/dev/null
    cd "$root"
  done
done

# The table: medians and ranges per program, ratios of medians to sdkonly.
awk -v order="${targets[*]}" '
  { cpu[$1] = cpu[$1] " " $3; size[$1] = size[$1] " " $6; prog[$1] = prog[$1] " " $7
    if (!($1 in hi) || $4 < lo[$1]) lo[$1] = $4
    if (!($1 in hi) || $5 > hi[$1]) hi[$1] = $5 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    lo_ = a[1]; hi_ = a[n]
    return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  END {
    n = split(order, ts, " ")
    printf "%-8s %-7s %-22s %-20s %-8s %s\n", "", "frames", "state KB", "cpu s", "cpu /", "program cpu s"
    printf "%-8s %-7s %-22s %-20s %-8s %s\n", "", "", "median [range]", "median [range]", ts[1], "median [range]"
    for (i = 1; i <= n; i++) {
      t = ts[i]
      m = median(cpu[t]); clo = lo_; chi = hi_
      s = median(size[t]); slo = lo_; shi = hi_
      p = median(prog[t]); plo = lo_; phi = hi_
      if (i == 1) base = m
      fr = (lo[t] == hi[t]) ? lo[t] : lo[t] "-" hi[t]
      printf "%-8s %-7s %-22s %-20s %-8.2f %s\n", t, fr,
        sprintf("%.1f [%.1f-%.1f]", s / 1000, slo / 1000, shi / 1000),
        sprintf("%.2f [%.2f-%.2f]", m, clo, chi), m / base,
        sprintf("%.2f [%.2f-%.2f]", p, plo, phi)
    }
  }' "$tmp/results"
