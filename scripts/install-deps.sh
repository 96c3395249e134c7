#!/usr/bin/env bash
# Installs everything gpufault needs to build and test, from Debian 12 packages. Run as root.
# Idempotent: does nothing when every package is already installed.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config
  libsqlite3-dev sqlite3 libfmt-dev libcli11-dev nlohmann-json3-dev
  libboost-dev libsystemd-dev libtomlplusplus-dev systemd-journal-remote
  zlib1g-dev libzstd-dev libxxhash-dev libdw-dev libelf-dev libunwind-dev libiberty-dev
  libgtest-dev libgmock-dev libbenchmark-dev time
  elfutils gdb  # eu-stack and gdb: bench/core_vs_eustack.sh's yardsticks
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing ${missing[*]}; run this script as root (sudo $0)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
