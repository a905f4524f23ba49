#!/usr/bin/env bash
# Builds the payhooks container image from the Containerfile: packs @payhooks/contract and
# @payhooks/server as `npm publish` would (their prepack builds them, the portal included), and
# builds with those tarballs as the only context.
#
#   scripts/build-image.sh [TAG]                       # default payhooks:<version>
#   NODE_IMAGE=<image> scripts/build-image.sh          # another Node 20 base (scripts/container-base.sh)
#   PACKED=1 scripts/build-image.sh                    # packages already built: pack without rebuilding
#   CONTAINER_ENGINE=docker scripts/build-image.sh     # default: podman if installed, else docker
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(node -p "require('./packages/server/package.json').version")"
tag="${1:-payhooks:$version}"
engine="${CONTAINER_ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}"
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
mkdir "$context/packages"
pack=(npm pack --json --pack-destination "$context/packages" -w packages/contract -w packages/server)
if [ "${PACKED:-0}" = 1 ]; then
  # The build is current (the test suite's): bundle the portal as prepack would, pack without scripts.
  (cd packages/server && node scripts/copy-assets.js --portal)
  pack+=(--ignore-scripts)
fi
npm_config_loglevel=error "${pack[@]}" >/dev/null
cp Containerfile "$context/Containerfile"
args=(build --format docker -f "$context/Containerfile" -t "$tag" --build-arg "VERSION=$version")
[ -n "${NODE_IMAGE:-}" ] && args+=(--build-arg "NODE_IMAGE=$NODE_IMAGE")
if [ "$engine" = podman ]; then
  # What this kind of machine needs (Debian's podman without crun or systemd cgroups); harmless elsewhere.
  engine_args=(--runtime runc --cgroup-manager cgroupfs)
  args+=(--network host --ulimit nofile=4096:4096 --ulimit nproc=2000:2000)
else
  engine_args=()
fi
"$engine" "${engine_args[@]}" "${args[@]}" "$context" >&2
echo "$tag"
