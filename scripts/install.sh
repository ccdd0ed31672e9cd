#!/usr/bin/env bash
# Builds ivy in release mode and installs the binary and its man page.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/install.sh [--uninstall] [--help]

Builds ivy (swift build -c release --product ivy) and installs
  $PREFIX/bin/ivy
  $PREFIX/share/man/man1/ivy.1
  $PREFIX/share/bash-completion/completions/ivy
  $PREFIX/share/zsh/site-functions/_ivy
  $PREFIX/share/fish/vendor_completions.d/ivy.fish
Running it again replaces them.

Options:
  --uninstall   Remove those files instead.
  -h, --help    Show this help.

Environment:
  PREFIX          Where to install (default: $HOME/.local).
  IVY_BUILD_PATH  Build directory, passed to swift build as --scratch-path
                  (default: the package's .build).
  IVY_BINARY      Install this already built ivy instead of building one.
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
bash_completion="$prefix/share/bash-completion/completions/ivy"
zsh_completion="$prefix/share/zsh/site-functions/_ivy"
fish_completion="$prefix/share/fish/vendor_completions.d/ivy.fish"

if "$uninstall"; then
    for file in "$binary" "$manpage" "$bash_completion" "$zsh_completion" "$fish_completion"; do
        if [ -e "$file" ] || [ -L "$file" ]; then
            rm -f "$file"
            echo "removed $file"
        else
            echo "not installed: $file"
        fi
    done
    exit 0
fi

if [ -n "${IVY_BINARY:-}" ]; then
    built="$IVY_BINARY"
else
    build=(swift build -c release --product ivy --package-path "$root")
    if [ -n "${IVY_BUILD_PATH:-}" ]; then
        build+=(--scratch-path "$IVY_BUILD_PATH")
    fi
    echo "building: ${build[*]}"
    "${build[@]}"
    built="$("${build[@]}" --show-bin-path)/ivy"
fi
if [ ! -x "$built" ]; then
    echo "install.sh: the build did not produce $built" >&2
    exit 1
fi

install -d -m 0755 "$prefix/bin" "$prefix/share/man/man1" "$(dirname "$bash_completion")" \
    "$(dirname "$zsh_completion")" "$(dirname "$fish_completion")"
install -m 0755 "$built" "$binary"
install -m 0644 "$root/man/ivy.1" "$manpage"
# Completions come from the parser itself, so they always match the commands.
for shell in bash zsh fish; do
    case "$shell" in
        bash) target="$bash_completion" ;;
        zsh) target="$zsh_completion" ;;
        fish) target="$fish_completion" ;;
    esac
    "$built" --generate-completion-script "$shell" > "$target.tmp"
    chmod 0644 "$target.tmp"
    mv "$target.tmp" "$target"
done
for file in "$binary" "$manpage" "$bash_completion" "$zsh_completion" "$fish_completion"; do
    echo "installed $file"
done

case ":${PATH}:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on your PATH; add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
