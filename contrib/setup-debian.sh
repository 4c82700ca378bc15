#!/bin/sh
# Installs what sbx needs to build, run and test on Debian or Ubuntu, as root.
# Packages only: debootstrap and apt know their own mirrors. procps gives the
# tests pgrep and pkill; curl, man-db and bash-completion are what the
# README's tour uses (the URLs of exposed ports, `man sbx`, completion);
# clang, clang-format and libclang-rt-dev (libFuzzer, the sanitizers) are
# CI's second compiler, format check and fuzzing build. libcurl4-openssl-dev
# is the registry transport's HTTP library; docker-registry (a real registry
# on loopback), skopeo (puts the fixtures there), openssl (the test CA) and
# podman (pulls and runs what `sbx push` sent) are registry.bats' tools, and
# contrib/bench/bench-pull.sh's; python3-pytest runs the Python SDK's tests.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  ca-certificates build-essential autoconf automake pkg-config \
  libseccomp-dev libcap-dev libarchive-dev libyajl-dev libyaml-dev libnftnl-dev libmnl-dev \
  libcurl4-openssl-dev \
  busybox-static runc runsc nftables iproute2 procps \
  bats python3 python3-pip python3-pytest go-md2man \
  docker-registry skopeo openssl \
  podman bubblewrap uidmap debootstrap \
  curl man-db bash-completion zsh fish e2fsprogs util-linux \
  clang clang-format libclang-rt-dev libcap2-bin
# docker-registry's package starts a registry on :5000, on every address: the
# tests start their own, on loopback, so the packaged one is stopped and
# disabled.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/docker-registry ]; then
  /etc/init.d/docker-registry stop >/dev/null 2>&1 || true
  update-rc.d docker-registry disable >/dev/null 2>&1 || true
fi
