#!/usr/bin/env bash
# `npm run test:sandbox`: proves that `npm ci && npm test` needs nothing but Node and npm. A fresh
# clone of this checkout's HEAD is installed and tested inside new Linux namespaces where
#   - the network is loopback only (no npm registry, no machine PostgreSQL/Redis on 127.0.0.1),
#   - PostgreSQL's programs (initdb, pg_ctl, postgres, psql, /usr/lib/postgresql) and any
#     system Chromium are hidden,
#   - TEST_POSTGRES_URL is unset,
# so the tests must start their own PostgreSQL and browser from npm packages.
# `npm ci` runs with --offline: the packages come from npm's cache (~/.npm), which any earlier
# `npm ci` of this lockfile with network has filled. Run as root (or where `unshare --user` works).
# Redis: redis-server stays visible (a test may start one of its own); the machine's server on
# 127.0.0.1:6379 is out of reach like everything else on the network.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/animal-store-sandbox-XXXXXX)"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

echo "== fresh clone of $(git -C "$SOURCE" rev-parse --short HEAD) in $WORK/repo"
git clone --quiet --no-hardlinks "$SOURCE" "$WORK/repo"

# Inside the namespaces: hide, show what is left, then the two commands.
cat >"$WORK/inside.sh" <<'INSIDE'
set -euo pipefail
ip link set lo up

# A directory with every entry of $1 but the names given, mounted over $1: those are gone.
hide_in() {
  local dir="$1" shadow; shift
  [ -d "$dir" ] || return 0
  shadow="$(mktemp -d "$SANDBOX_WORK/shadow-XXXXXX")"
  chmod 755 "$shadow"
  for entry in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    local name="${entry##*/}" hidden=0
    for pattern in "$@"; do [[ "$name" == $pattern ]] && hidden=1; done
    [ "$hidden" = 1 ] || ln -s "$entry" "$shadow/$name"
  done
  mount --bind "$shadow" "$dir"
}
hide_in /usr/local/bin 'initdb' 'pg_*' 'postgres' 'psql' 'chromium*' 'chrome*'
hide_in /usr/bin 'initdb' 'pg_*' 'postgres' 'psql' 'chromium*' 'chrome*' 'google-chrome*'
for dir in /usr/lib/postgresql /usr/lib/chromium /usr/lib/chromium-browser /opt/google; do
  [ -d "$dir" ] && mount -t tmpfs tmpfs "$dir"
done
unset TEST_POSTGRES_URL

echo "== inside: network interfaces: $(ls /sys/class/net | tr '\n' ' ')"
for program in initdb pg_ctl postgres psql chromium; do
  if command -v "$program" >/dev/null; then echo "!! $program is still visible"; exit 1; fi
done
echo "== inside: no initdb, pg_ctl, postgres, psql or chromium on PATH"
if (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then echo "!! a PostgreSQL answers on 5432"; exit 1; fi
echo "== inside: nothing listens on 127.0.0.1:5432"
if timeout 10 npm ping >/dev/null 2>&1; then echo "!! the npm registry is reachable"; exit 1; fi
echo "== inside: the npm registry is out of reach"
echo "== inside: machine Node $(command -v node) $(node --version), npm $(npm --version)"

cd "$SANDBOX_WORK/repo"
start=$SECONDS
npm ci --offline --no-audit --no-fund
echo "== npm ci: $((SECONDS - start)) s"
start=$SECONDS
npm test
echo "== npm test: $((SECONDS - start)) s"
INSIDE

if [ "$(id -u)" = 0 ]; then
  namespaces=(--net --mount --fork)
else
  namespaces=(--user --map-current-user --net --mount --fork)
fi
SANDBOX_WORK="$WORK" unshare "${namespaces[@]}" bash "$WORK/inside.sh"
echo "== sandbox: npm ci && npm test passed"
