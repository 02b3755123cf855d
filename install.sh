#!/usr/bin/env bash
# Installs gemvault from this checkout: system packages, a release build, the binary.
# Usage: ./install.sh [--prefix DIR]      (default /usr/local as root, ~/.local otherwise)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,3p' "$0" | sed 's/^# //'; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 64 ;;
  esac
done
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi

# Build-time: headers and pkg-config files. Run-time: libsodium, libedit, cmark-gfm, libcurl (opened on demand).
packages=(libsodium-dev libedit-dev libcurl4-openssl-dev libcmark-gfm-dev libcmark-gfm-extensions-dev pkg-config)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "install.sh: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "install.sh: missing packages; run this, then install.sh again:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then PATH="/opt/swift/usr/bin:$PATH"; else
    echo "install.sh: the Swift 6 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2
    exit 1
  fi
fi

cd "$here"
echo "install.sh: building (release, static Swift runtime)"
swift build -c release --static-swift-stdlib --product gemvault >/dev/null
binary="$(swift build -c release --static-swift-stdlib --show-bin-path)/gemvault"

mkdir -p "$prefix/bin"
install -s -m 0755 "$binary" "$prefix/bin/gemvault.new"
mv -f "$prefix/bin/gemvault.new" "$prefix/bin/gemvault"
echo "install.sh: installed $prefix/bin/gemvault ($("$prefix/bin/gemvault" --version))"

case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: note: $prefix/bin is not on your PATH; add it, for example:"
     echo "  echo 'export PATH=\"$prefix/bin:\$PATH\"' >> ~/.profile" ;;
esac
