# The release configuration that install.sh ships and bench/run measures; Docs/performance.md
# gives the figures behind each flag. Sourced by both: sets `release_flags`.
#   --static-swift-stdlib       the Swift runtime inside the binary (no libswift*.so to load)
#   --disable-local-rpath       no RUNPATH $ORIGIN: a library planted beside the binary is never loaded
#   static-cxx, -static-libgcc  libstdc++ and libgcc linked in too, leaving libc and libm as the
#                               only shared libraries (libsodium, libedit, cmark-gfm and
#                               libcrypto are linked from their archives by their module maps)
#   lld, pack-relative-relocs   the 59,000 relocations of a position-independent binary stored
#                               as a bitmap (DT_RELR, glibc 2.36): fewer pages touched at start
release_flags=(-c release --static-swift-stdlib --disable-local-rpath
  -Xswiftc -L -Xswiftc "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/static-cxx"
  -Xswiftc -Xclang-linker -Xswiftc -static-libgcc
  -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
