#!/usr/bin/env bash
# `npm test`: set the machine up (scripts/test-setup.sh), lint, build, then run the whole suite,
# with the type check running beside the build and the suite rather than before them. It reads
# the TypeScript sources, not what the build emits, and keeps about one core busy for 20 s: on a
# 2-core machine, before the suite, the other core sat idle. Arguments go to `vitest run`.
# Any step failing fails the command; a type error is printed once the suite is done.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-setup.sh || exit 1
npm run -s lint || exit 1

typecheck_log="$(mktemp)"
npm run -s typecheck >"$typecheck_log" 2>&1 &
typecheck=$!
trap 'kill "$typecheck" 2>/dev/null; rm -f "$typecheck_log"' EXIT

status=0
if npm run -s build; then
  node_modules/.bin/vitest run "$@" || status=$?
else
  status=1
fi

if ! wait "$typecheck"; then
  cat "$typecheck_log" >&2
  printf '\nnpm test: the type check failed (npm run typecheck, above).\n' >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
