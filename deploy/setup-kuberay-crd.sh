#!/usr/bin/env bash
# KubeRay's own RayService CRD for the manifest check in tests/deploy/test_deploy_configs.py: the
# KubeRay operator's Go module at the version below, put in Go's module cache by
# `go mod download` (a download, nothing is built); the CRD is config/crd/bases/ in it.
# Installs Debian's golang-go when no go is there (needs root and apt-get; not with
# --no-install). Prints the CRD's path last; without Go or without the module it says why and
# exits non-zero (the KubeRay schema test then skips with that reason).
set -euo pipefail
MODULE=github.com/ray-project/kuberay/ray-operator
VERSION=v1.5.1          # the oldest KubeRay that has authOptions (the manifest sets it)
CRD=config/crd/bases/ray.io_rayservices.yaml

if ! command -v go >/dev/null; then
    if [ "${1:-}" = --no-install ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "setup-kuberay-crd: no go command (Debian's golang-go: needs root and apt-get)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends golang-go >/dev/null
fi
# outside any Go module: only the one module is fetched, none of its dependencies
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
out=$(GOFLAGS=-modcacherw go mod download -json "$MODULE@$VERSION" 2>"$work/stderr") || true
dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -f "$dir/$CRD" ]; then
    why=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p')
    why=${why:-$(tail -n 3 "$work/stderr")}
    echo "setup-kuberay-crd: $MODULE@$VERSION not downloaded: $why" >&2
    exit 1
fi
echo "$dir/$CRD"
