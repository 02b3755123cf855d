#!/usr/bin/env bash
# Installs gemvault from this checkout: system packages, a release build, the binary, the
# man page and completions for the shells that are present.
# Usage: ./install.sh [--prefix DIR] [--binary PATH]    (default prefix /usr/local as root, ~/.local otherwise)
#        ./install.sh --uninstall [--purge] [--prefix DIR]
#   --binary PATH  install this already-built gemvault instead of building one
#   --uninstall    remove the binary, the man page and the completions; your vault and history stay
#   --purge        with --uninstall: also delete your vault, history, settings and cache (asks first)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix=""
binary=""
uninstall=false
purge=false
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --binary=*) binary="${1#--binary=}"; shift ;;
    --uninstall) uninstall=true; shift ;;
    --purge) purge=true; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
  esac
done
if $purge && ! $uninstall; then echo "install.sh: --purge goes with --uninstall" >&2; exit 64; fi
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi

# Every file install.sh puts down; --uninstall removes exactly these.
bin_path="$prefix/bin/gemvault"
man_path="$prefix/share/man/man1/gemvault.1"
bash_path="$prefix/share/bash-completion/completions/gemvault"
zsh_path="$prefix/share/zsh/site-functions/_gemvault"
fish_path="$prefix/share/fish/vendor_completions.d/gemvault.fish"
# The user guides (Docs/*.md), which --help and the man page point to.
doc_dir="$prefix/share/doc/gemvault"
guide_paths=()
for guide in "$here"/Docs/*.md; do guide_paths+=("$doc_dir/$(basename "$guide")"); done
all_paths=("$bin_path" "$man_path" "$bash_path" "$zsh_path" "$fish_path" "${guide_paths[@]}")

# Refuses a folder (the nearest existing one, and every one above it) that another user
# could change while we write: owned by someone other than us or root, or writable by
# group or others without the sticky bit. Someone who can rename entries there could swap
# our files for symbolic links, or our binary for theirs before we run it.
check_folder() {
  local dir="$1" me owner mode kind
  me=$(id -u)
  while [ "$dir" != "/" ] && [ ! -e "$dir" ] && [ ! -L "$dir" ]; do dir=$(dirname "$dir"); done
  while :; do
    read -r owner mode kind < <(stat -c '%u %a %F' "$dir")
    if [ "$owner" != 0 ] && [ "$owner" != "$me" ]; then
      echo "install.sh: $dir belongs to uid $owner, so it is not safe to install into; choose another --prefix" >&2; exit 1
    fi
    if [ "$kind" != "symbolic link" ] && (( (8#$mode & 8#022) != 0 && (8#$mode & 8#1000) == 0 )); then
      echo "install.sh: $dir is writable by group or others (mode $mode), so it is not safe to install into; choose another --prefix" >&2; exit 1
    fi
    [ "$dir" = "/" ] && break
    dir=$(dirname "$dir")
  done
}
for file in "${all_paths[@]}"; do check_folder "$(dirname "$file")"; done

# XDG folders count only when absolute, as gemvault itself reads them.
xdg() { case "$1" in /*) echo "$1" ;; *) echo "$HOME/$2" ;; esac; }

if $uninstall; then
  if $purge; then
    data="$(xdg "${XDG_DATA_HOME:-}" .local/share)/gemvault"
    config="$(xdg "${XDG_CONFIG_HOME:-}" .config)/gemvault"
    state="$(xdg "${XDG_STATE_HOME:-}" .local/state)/gemvault"
    cache="$(xdg "${XDG_CACHE_HOME:-}" .cache)/gemvault"
    echo "install.sh: --purge deletes, for $(id -un), with every key in the vault and every saved conversation:"
    for folder in "$data" "$config" "$state" "$cache"; do [ -e "$folder" ] && echo "  $folder"; done
    if [ -n "${GEMVAULT_VAULT:-}" ]; then
      echo "install.sh: note: GEMVAULT_VAULT names $GEMVAULT_VAULT; a vault outside $data is not deleted"
    fi
    if ! { exec 3<>/dev/tty; } 2>/dev/null; then
      echo "install.sh: --purge asks first, and there is no terminal to ask on; nothing was removed" >&2
      exit 1
    fi
    printf 'Type "delete" to delete them: ' >&3
    read -r answer <&3 || answer=""
    exec 3>&-
    if [ "$answer" != "delete" ]; then echo "install.sh: nothing was removed" >&2; exit 1; fi
    # A running session holds the vault in memory: end it before its files go. The
    # installed binary is run only from a folder check_folder accepted.
    locker="${binary:-$bin_path}"
    if [ -x "$locker" ]; then "$locker" lock >/dev/null 2>&1 || true; fi
    rm -rf -- "$data" "$config" "$state" "$cache"
    echo "install.sh: deleted the vault, history, settings and cache"
  fi
  removed=0
  for file in "${all_paths[@]}"; do
    if [ -e "$file" ] || [ -L "$file" ]; then rm -f -- "$file"; echo "install.sh: removed $file"; removed=$((removed + 1)); fi
  done
  rmdir "$doc_dir" 2>/dev/null || true
  [ "$removed" -gt 0 ] || echo "install.sh: nothing of gemvault's was installed under $prefix"
  $purge || echo "install.sh: your vault, history and settings were kept (--uninstall --purge deletes them)"
  exit 0
fi

if [ -z "$binary" ]; then
  # Build-time: headers and the static archives of libsodium, libedit (with libbsd, libmd and
  # libtinfo), cmark-gfm and libcrypto (RS256 for key rotate --create), which are linked in.
  # Run-time: libcurl, opened on demand with the system's TLS libraries.
  packages=(libsodium-dev libedit-dev libcurl4-openssl-dev libcmark-gfm-dev libcmark-gfm-extensions-dev libssl-dev)
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
  echo "install.sh: building (release, static Swift runtime and libraries)"
  # No RUNPATH, so no library put beside the installed binary is ever loaded; it needs only
  # the C library. The flags and their reasons: BuildSupport/release-flags.sh.
  source "$here/BuildSupport/release-flags.sh"
  swift build "${release_flags[@]}" --product gemvault >/dev/null
  binary="$(swift build "${release_flags[@]}" --show-bin-path)/gemvault"
fi
[ -x "$binary" ] || { echo "install.sh: $binary is not an executable" >&2; exit 1; }

# Each file is written to a new temp file (mktemp: created, never followed) beside its
# target and renamed into place, so a running shell never sees half a file.
put() { # put MODE TARGET [strip] < content
  mkdir -p "$(dirname "$2")"
  local temp
  temp=$(mktemp "$(dirname "$2")/.gemvault-install.XXXXXX")
  cat > "$temp"
  if [ "${3:-}" = strip ]; then strip "$temp" 2>/dev/null || true; fi
  chmod "$1" "$temp" && mv -f "$temp" "$2"
}
version=$("$binary" --version)
put 0755 "$bin_path" strip < "$binary"
echo "install.sh: installed $bin_path ($version)"
put 0644 "$man_path" < "$here/Docs/gemvault.1"
echo "install.sh: installed $man_path"
for guide in "$here"/Docs/*.md; do put 0644 "$doc_dir/$(basename "$guide")" < "$guide"; done
echo "install.sh: installed the guides in $doc_dir"
for shell in bash zsh fish; do
  command -v "$shell" >/dev/null 2>&1 || continue
  target_var="${shell}_path"
  # Generated by the binary we were given, never by the copy in the prefix.
  "$binary" completion "$shell" | put 0644 "${!target_var}"
  echo "install.sh: installed ${!target_var}"
done

case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: note: $prefix/bin is not on your PATH; add it, for example:"
     echo "  echo 'export PATH=\"$prefix/bin:\$PATH\"' >> ~/.profile" ;;
esac
if command -v zsh >/dev/null 2>&1 && [ "$prefix" != /usr/local ] && [ "$prefix" != /usr ]; then
  echo "install.sh: note: for zsh, add $prefix/share/zsh/site-functions to fpath before compinit"
fi
echo "install.sh: run 'gemvault' to set up a vault, or 'man gemvault'"
