#!/usr/bin/env bash
# Builds ivy in release mode and installs the binary and its man page.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/install.sh [--uninstall] [--help]

Builds ivy (swift build -c release --product ivy) and installs
  $PREFIX/bin/ivy
  $PREFIX/share/man/man1/ivy.1
Running it again replaces both.

Options:
  --uninstall   Remove both files instead.
  -h, --help    Show this help.

Environment:
  PREFIX          Where to install (default: $HOME/.local).
  IVY_BUILD_PATH  Build directory, passed to swift build as --scratch-path
                  (default: the package's .build).
EOF
}

uninstall=false
for argument in "$@"; do
    case "$argument" in
        --uninstall) uninstall=true ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown argument '$argument'" >&2; usage >&2; exit 64 ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${PREFIX:-$HOME/.local}"
binary="$prefix/bin/ivy"
manpage="$prefix/share/man/man1/ivy.1"

if "$uninstall"; then
    for file in "$binary" "$manpage"; do
        if [ -e "$file" ] || [ -L "$file" ]; then
            rm -f "$file"
            echo "removed $file"
        else
            echo "not installed: $file"
        fi
    done
    exit 0
fi

build=(swift build -c release --product ivy --package-path "$root")
if [ -n "${IVY_BUILD_PATH:-}" ]; then
    build+=(--scratch-path "$IVY_BUILD_PATH")
fi
echo "building: ${build[*]}"
"${build[@]}"
built="$("${build[@]}" --show-bin-path)/ivy"
if [ ! -x "$built" ]; then
    echo "install.sh: the build did not produce $built" >&2
    exit 1
fi

install -d -m 0755 "$prefix/bin" "$prefix/share/man/man1"
install -m 0755 "$built" "$binary"
install -m 0644 "$root/man/ivy.1" "$manpage"
echo "installed $binary"
echo "installed $manpage"

case ":${PATH}:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on your PATH; add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
