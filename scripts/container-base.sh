#!/usr/bin/env bash
# A Debian bookworm base image with Node.js 20 at /usr/local/bin/node (and npm), made from
# Debian's own packages (debootstrap) and this machine's node and npm: for machines that can't
# pull the official node:20-bookworm-slim image (no registry), such as CI's. It carries the
# machine's CA bundle and points NODE_EXTRA_CA_CERTS at it, so npm inside a build trusts what
# the machine trusts. Tagged with this script's hash and the Node version: built once per
# machine, again when either changes. Prints the tag.
#
#   bash scripts/container-base.sh    # -> localhost/payhooks-node-base:<hash>-node20.x.y
set -euo pipefail
podman=(podman --runtime runc --cgroup-manager cgroupfs)
node_bin="$(command -v node)"
version="$("$node_bin" -p process.versions.node)"
case "$version" in 20.*) ;; *) echo "container-base: Node 20 expected, found $version" >&2; exit 1 ;; esac
tag="localhost/payhooks-node-base:$(sha256sum "$0" | cut -c1-12)-node$version"
if "${podman[@]}" image exists "$tag"; then
  echo "$tag"
  exit 0
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
echo "container-base: debootstrap bookworm (minbase) into $root" >&2
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >&2
install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
npm_dir="$(npm root -g)/npm"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
tar -C "$root" -c . | "${podman[@]}" import \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  - "$tag" >&2
echo "$tag"
