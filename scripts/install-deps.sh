#!/usr/bin/env bash
# Installs megasim's build and test dependencies from Debian's packages.
# Idempotent: packages already present are skipped, `apt-get update` runs only when
# something must be installed, and sudo is used when not running as root.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config ccache
  libeigen3-dev nlohmann-json3-dev libboost-graph-dev doctest-dev libcli11-dev
  libfmt-dev libbenchmark-dev hyperfine python3-jsonschema
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
