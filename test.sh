#!/usr/bin/env bash
# The whole test suite, as CI runs it, ending with each package that failed
# and why (its failed tests and what they said, a panic, a build error, or
# go test's timeout and the tests it caught running), then what did not run
# and how to include it. Extra arguments go to go test:
#
#   ./test.sh              # everything
#   ./test.sh -short       # without the rows that are slow under -race
#   ./test.sh -count=1     # without the test cache
#   PKGS="./integration ./examples/automation" ./test.sh   # only these packages
#   EVENTS=DIR ./test.sh   # keeps go test's events (-json) in DIR, e.g. to time each test
#
# Each test binary gets 60 minutes (go test -timeout): a hang fails the run
# with the tests that were running, a busy machine does not.
#
# Some tests need more than Go, and skip, saying why, when it is missing: a C
# compiler for the race detector, Node.js with npm for the Node.js tests
# (this script runs npm ci in testdata/nodejs and testdata/rawjs when their
# node_modules are missing), Chromium for the browser test of callbacklog's
# HTML timeline, and pulumi and pulumi-language-go on PATH for tests that run
# the real engine. The list at the end is what the tests themselves reported
# as skipped, so it cannot disagree with them. With STRICT=1 (as in CI) a
# skipped test, or tests run without the race detector, fail the run.
set -uo pipefail
cd "$(dirname "$0")"

notes=() # what cannot be tested here and is not a skipped test

version() { "$@" 2>/dev/null | head -n 1; }

echo "== prerequisites"
echo "go:                 $(go env GOVERSION)"

# The race detector needs cgo, and cgo a C compiler.
race=-race
cc=$(go env CC)
if [ "$(go env CGO_ENABLED)" = 1 ] && command -v "$cc" >/dev/null 2>&1; then
  echo "C compiler:         $cc (the race detector is on)"
else
  race=
  export CGO_ENABLED=0
  echo "C compiler:         none ($cc not found, or CGO_ENABLED=0): the tests run without the race detector, and without cgo"
  notes+=("the race detector: install a C compiler (gcc or clang) with cgo enabled, and run ./test.sh again")
fi

# The Node.js fixtures: the Node.js SDK's (testdata/nodejs) and a callbacks
# server over raw gRPC with no SDK (testdata/rawjs), each pinned by its
# package-lock.json and checked for by one package it installs.
installed() { [ -f "$1/node_modules/$2/package.json" ]; }
if command -v node >/dev/null 2>&1; then
  echo "node:               $(version node --version)"
  for fixture in testdata/nodejs:@pulumi/pulumi testdata/rawjs:@grpc/grpc-js; do
    dir=${fixture%%:*} pkg=${fixture#*:}
    if installed "$dir" "$pkg"; then
      printf '%-19s %s\n' "$dir:" "node_modules installed"
    elif command -v npm >/dev/null 2>&1; then
      printf '%-19s %s\n' "$dir:" "node_modules missing: npm ci (pinned by package-lock.json)"
      if ! (cd "$dir" && npm ci --no-audit --no-fund); then
        notes+=("npm ci in $dir failed (see above): fix it, or run it by hand, and run ./test.sh again")
      fi
    else
      printf '%-19s %s\n' "$dir:" "node_modules missing, and npm is not installed"
      notes+=("npm is not installed, so $dir/node_modules cannot be: install npm and run ./test.sh again")
    fi
  done
else
  echo "node:               not installed (the Node.js tests skip)"
fi

if command -v chromium >/dev/null 2>&1; then
  echo "chromium:           $(version chromium --version)"
else
  echo "chromium:           not installed (the browser test of callbacklog's HTML timeline skips; apt-get install chromium)"
fi

for tool in pulumi pulumi-language-go; do
  if command -v "$tool" >/dev/null 2>&1; then
    printf '%-19s %s\n' "$tool:" "$(command -v "$tool")"
  else
    printf '%-19s %s\n' "$tool:" "not on PATH (tests that run the real engine skip; their skip message says how to install the Pulumi CLI)"
  fi
done

if [ -n "${EVENTS:-}" ]; then
  mkdir -p "$EVENTS" && tmp=$(cd "$EVENTS" && pwd) || exit 2
  rm -f "$tmp"/[0-9].json
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
if ! go build -o "$tmp/testreport" ./internal/testkit/testreport; then
  echo "test.sh: cannot build internal/testkit/testreport" >&2
  exit 2
fi

status=0
failed=() # why the run failed, beyond the packages testreport names
fail() {  # fail CODE MESSAGE: the run fails, and the closing lines say why
  failed+=("$2")
  if [ "$status" = 0 ] || [ "$1" = 2 ]; then status=$1; fi
}

# gotest FILE ARGS...: go test -json ARGS, shown as go test shows it and
# saved to FILE for the closing lines. The timeout is go test's own, per
# test binary: far above what a loaded two-core machine needs, so that only
# a hang reaches it (its default, 10 minutes, is not). Arguments given to
# test.sh come after it and win.
gotest() {
  local file=$1
  shift
  go test -json -timeout=60m "$@" | "$tmp/testreport" -save "$tmp/$file"
  local codes=("${PIPESTATUS[@]}")
  checkcodes "${codes[0]}" "${codes[1]}" "$*"
}

# checkcodes GOTEST TESTREPORT ARGS: what go test's and testreport's exit
# statuses say about a gotest run.
checkcodes() {
  if [ "$2" != 0 ]; then
    fail 2 "testreport could not show or save the events of go test $3 (status $2)"
  fi
  if [ "$1" != 0 ]; then
    # A failed package is named at the end; this says why when none is
    # (a bad flag, a pattern that matches nothing, a go command that died).
    fail 1 "go test $3 exited with status $1"
  fi
}

# The real-engine tests and the conformance kit build programs as
# pulumi-language-go builds them (-trimpath), several go commands side by
# side; on a cold build cache each of those would compile the Pulumi SDK and
# gRPC for itself. Compiling every package of the module that way once
# first (go list -export compiles without linking) leaves them only the
# linking. A package that does not compile is named by go test below.
echo
echo "== go list -export -trimpath ./... (compiles what the tests' programs import, once)"
go list -export -trimpath ./... >/dev/null 2>&1

pkgs=${PKGS:-./...}

# The copied examples build in go commands of their own, which the race
# detector does not reach: under -race that test skips, and runs once
# without it. Most of its time is spent waiting for the module proxy and
# for those go commands, so when the whole module is tested it runs beside
# the race detector's tests instead of after them, and its output is shown
# after theirs. Whatever became of it is said.
copyTest=TestEveryExampleBuildsWhenCopiedAlone
copyArgs=(./examples "$@" -run "^$copyTest\$")
beside=
if [ -n "$race" ] && [ "$pkgs" = ./... ]; then
  (
    go test -json -timeout=60m "${copyArgs[@]}" | "$tmp/testreport" -save "$tmp/2.json"
    echo "${PIPESTATUS[0]} ${PIPESTATUS[1]}" >"$tmp/2.codes"
  ) >"$tmp/2.out" 2>&1 </dev/null &
  beside=$!
fi

echo
echo "== go test ${race:+$race }$pkgs${*:+ $*}${beside:+ (and, beside it, go test ${copyArgs[*]} without -race)}"
# shellcheck disable=SC2086 # PKGS is a list of package patterns
gotest 1.json $race $pkgs "$@"

if [ -n "$race" ]; then
  copied=$("$tmp/testreport" -status "$copyTest" "$tmp/1.json") || copied=error
  echo
  if [ -n "$beside" ]; then
    wait "$beside"
    echo "== go test ${copyArgs[*]} (without -race, run beside the tests above; under -race: $copied)"
    cat "$tmp/2.out"
    read -r gocode reportcode <"$tmp/2.codes" 2>/dev/null || { gocode=unknown reportcode=unknown; }
    checkcodes "$gocode" "$reportcode" "${copyArgs[*]}"
    copied=beside
  fi
  case $copied in
    skip | beside)
      if [ "$copied" = skip ]; then
        echo "== go test ${copyArgs[*]} (without -race)"
        gotest 2.json "${copyArgs[@]}"
      fi
      case $("$tmp/testreport" -status "$copyTest" "$tmp/2.json") in
        pass | fail) ;;
        *) fail 1 "$copyTest did not run without -race either: the copied examples were not built" ;;
      esac
      ;;
    pass | fail)
      echo "== $copyTest ran under -race ($copied): not run again without it"
      ;;
    absent)
      if [ $# -gt 0 ] || [ "$pkgs" != ./... ]; then
        echo "== $copyTest: not selected ($pkgs${*:+ $*}), so not run without -race either"
      else
        echo "== $copyTest: go test ./... neither ran nor skipped it (see above)"
        fail 1 "$copyTest did not run: the copied examples were not built"
      fi
      ;;
    *)
      fail 2 "testreport could not tell what became of $copyTest"
      ;;
  esac
fi

echo
echo "== what failed"
"$tmp/testreport" -failed "$tmp"/*.json
case $? in
  0 | 1) ;;
  *) fail 2 "testreport could not read the events to say what failed" ;;
esac
for f in "${failed[@]+"${failed[@]}"}"; do
  echo "  $f"
done

echo
echo "== what did not run"
for note in "${notes[@]+"${notes[@]}"}"; do
  echo "  $note"
done
"$tmp/testreport" -skipped "$tmp"/*.json
case $? in
  0) ;;
  1) if [ "${STRICT:-}" = 1 ] && [ "$status" = 0 ]; then status=1; fi ;;
  *) status=2 ;;
esac
if [ "${STRICT:-}" = 1 ] && [ ${#notes[@]} -gt 0 ] && [ "$status" = 0 ]; then
  status=1
fi
if [ "$status" = 0 ]; then
  echo "== the tests passed"
else
  echo "== FAIL (status $status)"
fi
exit "$status"
