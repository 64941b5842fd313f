#!/usr/bin/env bash
# Installs megasim's build and test dependencies: Debian's packages (Chromium for the HTML
# report's browser test, Node.js's npm, clang and its libFuzzer runtime for the fuzz targets, OpenMPI for
# `mpirun megasim search`), then the HTML report's charting library from the npm
# registry at the version reports/html/package-lock.json pins (npm ci checks its hash).
# Idempotent: packages already present are skipped, `apt-get update` runs only when
# something must be installed, npm runs only when the pinned version is not in place, and sudo
# is used when not running as root. `--html-only`: the charting library alone, which configure
# needs (scripts/device-calibrate.sh bundle, in a checkout without reports/html/node_modules).
set -euo pipefail
case "${1:-}" in
  --html-only | "") ;;
  *) echo "usage: scripts/install-deps.sh [--html-only]" >&2; exit 2 ;;
esac

# Debian's packages.
install_packages() {
  packages=(
    build-essential cmake make pkg-config ccache
    libeigen3-dev nlohmann-json3-dev libboost-graph-dev doctest-dev libcli11-dev
    libfmt-dev libbenchmark-dev hyperfine python3-jsonschema chromium
    clang libclang-rt-14-dev openmpi-bin libopenmpi-dev
  )
  # npm: Debian's package, unless a Node.js that ships its own npm is installed already.
  command -v npm >/dev/null 2>&1 || packages+=(npm)

  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done

  if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
  else
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
      sudo_cmd=(sudo)
    fi
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -q
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}
[ "${1:-}" = --html-only ] || install_packages

# The charting library, into reports/html/node_modules (ignored by git).
html="$(cd "$(dirname "$0")/.." && pwd)/reports/html"
pinned=$(sed -n 's/.*"echarts": "\(.*\)".*/\1/p' "$html/package.json")
installed=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' "$html/node_modules/echarts/package.json" 2>/dev/null || true)
if [ "$installed" = "$pinned" ]; then
  echo "install-deps: echarts $pinned present"
else
  echo "install-deps: installing echarts $pinned with npm ci"
  (cd "$html" && npm ci --no-audit --no-fund --ignore-scripts)
fi
