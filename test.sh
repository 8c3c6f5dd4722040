#!/usr/bin/env bash
# The whole test suite, as CI runs it, ending with what did not run and how
# to include it. Extra arguments go to go test:
#
#   ./test.sh              # everything
#   ./test.sh -short       # without the rows that are slow under -race
#   ./test.sh -count=1     # without the test cache
#
# Some tests need more than Go, and skip, saying why, when it is missing: a C
# compiler for the race detector, Node.js with npm for the Node.js tests
# (this script runs npm ci in testdata/nodejs when its node_modules is
# missing), and pulumi and pulumi-language-go on PATH for tests that run the
# real engine. The list at the end is what the tests themselves reported as
# skipped, so it cannot disagree with them. With STRICT=1 (as in CI) a
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

fixtures=testdata/nodejs
installed() { [ -f "$fixtures/node_modules/@pulumi/pulumi/package.json" ]; }
if command -v node >/dev/null 2>&1; then
  echo "node:               $(version node --version)"
  if installed; then
    echo "$fixtures:    node_modules installed"
  elif command -v npm >/dev/null 2>&1; then
    echo "$fixtures:    node_modules missing: npm ci (pinned by package-lock.json)"
    if ! (cd "$fixtures" && npm ci --no-audit --no-fund); then
      notes+=("npm ci in $fixtures failed (see above): fix it, or run it by hand, and run ./test.sh again")
    fi
  else
    echo "$fixtures:    node_modules missing, and npm is not installed"
    notes+=("npm is not installed, so $fixtures/node_modules cannot be: install npm and run ./test.sh again")
  fi
else
  echo "node:               not installed (the Node.js tests skip)"
fi

for tool in pulumi pulumi-language-go; do
  if command -v "$tool" >/dev/null 2>&1; then
    printf '%-19s %s\n' "$tool:" "$(command -v "$tool")"
  else
    printf '%-19s %s\n' "$tool:" "not on PATH (tests that run the real engine skip)"
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! go build -o "$tmp/testreport" ./internal/testkit/testreport; then
  echo "test.sh: cannot build internal/testkit/testreport" >&2
  exit 2
fi

echo
echo "== go test ${race:+$race }./... $*"
go test $race -json ./... "$@" | "$tmp/testreport" -save "$tmp/1.json"
codes=("${PIPESTATUS[@]}")
status=${codes[0]}
[ "${codes[1]}" = 0 ] || status=2

# The copied examples build in go commands of their own, which the race
# detector does not reach: under -race that test skips, and runs here once
# without it.
copyTest=TestEveryExampleBuildsWhenCopiedAlone
if [ -n "$race" ] && grep '"Action":"skip"' "$tmp/1.json" | grep -q "\"Test\":\"$copyTest\""; then
  echo
  echo "== go test ./examples${*:+ $*} -run '^$copyTest\$' (without -race)"
  go test -json ./examples "$@" -run "^$copyTest\$" | "$tmp/testreport" -save "$tmp/2.json"
  codes=("${PIPESTATUS[@]}")
  [ "${codes[0]}" = 0 ] || status=${codes[0]}
  [ "${codes[1]}" = 0 ] || status=2
fi

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
