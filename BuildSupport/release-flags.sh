# The release configuration that install.sh ships and bench/run measures; Docs/performance.md
# gives the figures behind each flag. Sourced by both: sets `release_flags`.
#   --static-swift-stdlib       the Swift runtime inside the binary (no libswift*.so to load)
#   --disable-local-rpath       no RUNPATH $ORIGIN: a library planted beside the binary is never loaded
#   static-cxx, -static-libgcc  libstdc++ and libgcc linked in too, leaving libc and libm as the
#                               only shared libraries (libsodium, libedit, cmark-gfm and
#                               libcrypto are linked from their archives by their module maps)
#   --exclude-libs ALL          no symbol of those archives is exported, so the libssl that
#                               libcurl loads binds to the system's libcrypto, never to ours
#   function sections, order   each function in its own section, and the functions that `ask`,
#                               `chat`, `unlock`, the agent and `key get` run placed first, in
#                               the order of BuildSupport/hot-symbols.txt (bench/hot_symbols.py
#                               makes it): the kernel maps a program's code 64 KiB at a time,
#                               so scattered hot code kept 7 MiB of it resident in `ask`.
#                               Only a layout: a name missing from the list costs memory, never
#                               behaviour.
#   version script             no Swift symbol in the dynamic symbol table
#                               (BuildSupport/local-swift-symbols.map): glibc's dladdr, which
#                               the Swift runtime calls at start-up, scans that table, and
#                               4,300 exported symbols cost a tenth of `--version`'s instructions.
#   lld, pack-relative-relocs   the 59,000 relocations of a position-independent binary stored
#                               as a bitmap (DT_RELR): fewer pages touched at start. Only where
#                               the C library reads it (glibc 2.36, Debian 12); an older one
#                               would refuse to start the binary.
release_flags=(-c release --static-swift-stdlib --disable-local-rpath
  -Xswiftc -L -Xswiftc "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/static-cxx"
  -Xswiftc -Xclang-linker -Xswiftc -static-libgcc
  -Xlinker --exclude-libs -Xlinker ALL
  -Xswiftc -use-ld=lld
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
  -Xlinker --symbol-ordering-file="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hot-symbols.txt"
  -Xlinker --no-warn-symbol-ordering
  -Xlinker --version-script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/local-swift-symbols.map")
if printf '2.36\n%s\n' "$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')" | sort -V -C; then
  release_flags+=(-Xlinker -z -Xlinker pack-relative-relocs)
fi
