#!/bin/sh
# Installs what sbx needs to build, run and test on Debian or Ubuntu, as root.
# Packages only: debootstrap and apt know their own mirrors.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  ca-certificates build-essential autoconf automake pkg-config \
  libseccomp-dev libcap-dev libarchive-dev libyajl-dev libnftnl-dev libmnl-dev \
  busybox-static runc runsc nftables iproute2 \
  bats python3 python3-pip go-md2man \
  podman bubblewrap uidmap debootstrap
