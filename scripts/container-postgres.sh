#!/usr/bin/env bash
# Builds localhost/payhooks-postgres (PostgreSQL 15 from Debian's packages, with the official
# postgres image's environment: scripts/container-postgres/) on the base scripts/container-base.sh
# makes, once per machine and again when either changes. Prints the tag. For the compose test on
# machines that can't pull docker.io/library/postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
podman=(podman --runtime runc --cgroup-manager cgroupfs)
base="$(bash scripts/container-base.sh)"
hash="$(cat scripts/container-postgres.sh scripts/container-postgres/* <(echo "$base") | sha256sum | cut -c1-12)"
tag="localhost/payhooks-postgres:15-$hash"
if ! "${podman[@]}" image exists "$tag"; then
  "${podman[@]}" build --network host --ulimit nofile=4096:4096 --ulimit nproc=2000:2000 \
    --build-arg "BASE=$base" -t "$tag" scripts/container-postgres >&2
fi
echo "$tag"
