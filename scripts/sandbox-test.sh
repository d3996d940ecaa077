#!/usr/bin/env bash
# `npm run test:sandbox`: proves that `npm ci && npm test` needs nothing but Node and npm. A fresh
# clone of this checkout's HEAD is installed and tested inside new Linux namespaces where
#   - the network is loopback only (no npm registry, no machine PostgreSQL/Redis on 127.0.0.1),
#   - PostgreSQL's programs (initdb, pg_ctl, postgres, psql, /usr/lib/postgresql) and any
#     system Chromium are hidden,
#   - TEST_POSTGRES_URL is unset,
# so the tests must start their own PostgreSQL and browser from npm packages.
# `npm ci` inside runs with --offline, from npm's cache (~/.npm): before entering, the locked
# packages are fetched into that cache (an `npm ci --ignore-scripts` in a scratch folder, with
# network). Run as root (or where `unshare --user --map-current-user` works).
# Redis: redis-server stays visible (a test may start one of its own); the machine's server on
# 127.0.0.1:6379 is out of reach like everything else on the network.
# The clone sits in a folder only its owner may enter (0700, like root's home or a `mktemp -d`),
# so the PostgreSQL that the tests run as another user must still reach its programs.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/animal-store-sandbox-XXXXXX)"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

# $WORK stays enterable: the links that hide programs below point into it.
mkdir -m 700 "$WORK/private"
echo "== fresh clone of $(git -C "$SOURCE" rev-parse --short HEAD) in $WORK/private/repo (a folder only its owner may enter)"
git clone --quiet --no-hardlinks "$SOURCE" "$WORK/private/repo"

echo "== filling npm's cache with the locked packages (outside, with network)"
mkdir "$WORK/warm"
cp "$WORK/private/repo/package.json" "$WORK/private/repo/package-lock.json" "$WORK/warm/"
# The lock file's local packages (`file:` links, test/browser/packages/) need their manifests too.
(cd "$WORK/private/repo" && node -e 'for (const e of Object.values(require("./package-lock.json").packages)) if (e.link) console.log(e.resolved)' |
  while read -r linked; do mkdir -p "$WORK/warm/$linked" && cp "$linked/package.json" "$WORK/warm/$linked/"; done)
(cd "$WORK/warm" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
rm -rf "$WORK/warm"

# Inside the namespaces: hide, show what is left, then the two commands.
cat >"$WORK/inside.sh" <<'INSIDE'
set -euo pipefail
ip link set lo up

# A directory of links to every entry of $1 but the names given, mounted over $1: those are gone.
# The links point into a second mount of the original directory, which the shadow does not cover.
hide_in() {
  local dir="$1" shadow original; shift
  [ -d "$dir" ] || return 0
  shadow="$(mktemp -d "$SANDBOX_WORK/shadow-XXXXXX")"
  original="$(mktemp -d "$SANDBOX_WORK/original-XXXXXX")"
  chmod 755 "$shadow" "$original"
  mount --bind "$dir" "$original"
  for entry in "$original"/* "$original"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    local name="${entry##*/}" hidden=0
    for pattern in "$@"; do [[ "$name" == $pattern ]] && hidden=1; done
    [ "$hidden" = 1 ] && continue
    if [ -L "$entry" ]; then cp -P "$entry" "$shadow/$name"; else ln -s "$entry" "$shadow/$name"; fi
  done
  mount --bind "$shadow" "$dir"
}
hide_in /usr/local/bin 'initdb' 'pg_*' 'postgres' 'psql' 'chromium*' 'chrome*'
hide_in /usr/bin 'initdb' 'pg_*' 'postgres' 'psql' 'chromium*' 'chrome*' 'google-chrome*'
for dir in /usr/lib/postgresql /usr/lib/chromium /usr/lib/chromium-browser /opt/google; do
  [ -d "$dir" ] && mount -t tmpfs tmpfs "$dir"
done
unset TEST_POSTGRES_URL

echo "== inside: network interfaces: $(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')"
for program in initdb pg_ctl postgres psql chromium; do
  if command -v "$program" >/dev/null; then echo "!! $program is still visible"; exit 1; fi
done
echo "== inside: no initdb, pg_ctl, postgres, psql or chromium on PATH"
if (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then echo "!! a PostgreSQL answers on 5432"; exit 1; fi
echo "== inside: nothing listens on 127.0.0.1:5432"
command -v npm >/dev/null || { echo "!! npm is missing"; exit 1; }
if timeout 20 npm ping >/dev/null 2>&1; then echo "!! the npm registry is reachable"; exit 1; fi
echo "== inside: the npm registry is out of reach"
echo "== inside: machine Node $(command -v node) $(node --version), npm $(npm --version)"

cd "$SANDBOX_WORK/private/repo"
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
