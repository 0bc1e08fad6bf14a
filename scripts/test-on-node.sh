#!/usr/bin/env bash
# Runs `npm test` (or the command given after the major) on another Node.js major,
# default 24, leaving this checkout and its node_modules (built for the machine's Node)
# untouched: `scripts/test-on-node.sh 24 [command…]`.
#
# Node comes from the npm registry's `node` package (its platform package holds bin/node
# and the headers in include/node; nodejs.org need not be reachable). The project is
# copied to .tmp/node-<major>/tree with node_modules hard-linked, except the native
# addons, which are copied and rebuilt from source against that Node's headers
# (node-gyp --nodedir; prebuilt binaries come from GitHub, which need not be reachable).
set -euo pipefail

major="${1:-24}"
shift || true
[ $# -gt 0 ] || set -- npm test
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.tmp/node-$major"
runtime="$work/runtime"
tree="$work/tree"
# Addons compiled against one Node's ABI (bcrypt ships N-API prebuilds that load on any
# Node, but is rebuilt too so that nothing native comes from the other tree).
native=(better-sqlite3 bcrypt)

log() { printf '[node %s] %s\n' "$major" "$*" >&2; }

# 1. The runtime, installed once per major (npm install is a no-op when it is current).
mkdir -p "$runtime"
[ -f "$runtime/package.json" ] || echo '{"private": true}' > "$runtime/package.json"
if [ ! -x "$runtime/node_modules/node/bin/node" ]; then
  log "installing node@$major from the npm registry"
  npm install --prefix "$runtime" --no-audit --no-fund --loglevel=error "node@$major" >&2
fi
node_bin="$runtime/node_modules/node/bin"
version="$("$node_bin/node" -p process.versions.node)"
[ "${version%%.*}" = "$major" ] || { log "expected Node $major, got $version"; exit 1; }
nodedir=""
for dir in "$runtime"/node_modules/node/node_modules/node-* "$runtime"/node_modules/node-*; do
  if [ -f "$dir/include/node/node_version.h" ]; then nodedir="$dir"; break; fi
done
[ -n "$nodedir" ] || { log "no headers (include/node) in the node package"; exit 1; }

# 2. The sources, copied afresh on every run (what is in the working tree, not only commits).
mkdir -p "$tree"
find "$tree" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
tar -C "$root" --exclude=./node_modules --exclude=./.tmp --exclude=./.git --exclude=./dist \
  --exclude=./data --exclude=./coverage -cf - . | tar -C "$tree" -xf -

# 3. node_modules, rebuilt when the lockfile or the Node version changed.
stamp="$version $(sha256sum "$root/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -d "$tree/node_modules" ]; then
  log "linking node_modules and building ${native[*]} for Node $version"
  rm -rf "$tree/node_modules" "$work/stamp"
  cp -al "$root/node_modules" "$tree/node_modules"
  # Files that npm or vitest rewrite must not be shared with the checkout's tree.
  rm -rf "$tree/node_modules/.package-lock.json" "$tree/node_modules/.vite" "$tree/node_modules/.cache"
  [ ! -f "$root/node_modules/.package-lock.json" ] || cp "$root/node_modules/.package-lock.json" "$tree/node_modules/"
  for pkg in "${native[@]}"; do
    rm -rf "$tree/node_modules/$pkg"
    cp -a "$root/node_modules/$pkg" "$tree/node_modules/$pkg"
  done
  (
    cd "$tree"
    PATH="$node_bin:$PATH" npm_config_nodedir="$nodedir" npm_config_build_from_source=true \
      npm rebuild --foreground-scripts --loglevel=error "${native[@]}" >&2
  )
  echo "$stamp" > "$work/stamp"
fi

# 4. The command, with this Node first on PATH (npm, npx and child processes use it).
log "running: $* (in $tree)"
cd "$tree"
export PATH="$node_bin:$PATH"
exec "$@"
