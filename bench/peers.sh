#!/usr/bin/env bash
# This module's callback server against its peers, from a clone of the
# repository alone: a bare protobuf round trip (the baseline), the Pulumi Go
# SDK's callback server and the Node.js SDK's, each answering unary Invoke
# calls of an identity resource transform. It installs testdata/nodejs's
# @pulumi/pulumi when missing (npm ci, pinned by package-lock.json), then
# runs the driver, go run ./bench/peers, which builds the Go targets, plays
# the engine to each, verifies every response and prints one Markdown table
# with the ratios of this run (see bench/peers/main.go).
#
#   bench/peers.sh                                    # the default run
#   bench/peers.sh -targets proto,ours,gosdk          # without Node.js
#   bench/peers.sh -window 300ms -rounds 1            # a quick look, under a minute
#   bench/peers.sh -targets proto,splice,ours,ours-unread,gosdk,nodesdk  # every target
#
# The default run (small, medium and large requests at 1, 4 and 16 calls in
# flight; 1 s windows, 3 rounds, 1 s warm-ups; targets proto, ours, gosdk
# and nodesdk) took 3.3 to 4.3 minutes in three runs on a busy 2-core
# machine with a warm build cache: about 2.5 minutes of calls, the rest
# mostly checking the responses. A cold build cache adds about a minute,
# npm ci about 10 s.
#
# Arguments go to the driver (go run ./bench/peers -h lists them). Needs go;
# node and npm for the Node.js target, which is left out, saying why,
# without them. Every call goes to 127.0.0.1. The exit status is the
# driver's: 1 if any call failed or any response was wrong.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=testdata/nodejs/node_modules/@pulumi/pulumi/package.json
if command -v node >/dev/null 2>&1 && [ ! -f "$modules" ]; then
  if command -v npm >/dev/null 2>&1; then
    (cd testdata/nodejs && npm ci --no-audit --no-fund)
  else
    echo "peers.sh: npm is not installed, so testdata/nodejs/node_modules cannot be" >&2
  fi
fi
exec go run ./bench/peers "$@"
