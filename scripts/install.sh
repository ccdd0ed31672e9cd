#!/usr/bin/env bash
# Builds ivy in release mode and installs the binary, its man page, shell completions, a
# systemd user unit for `ivy sync --watch`, and ivy-emulator (a fake Google to try ivy with).
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/install.sh [--uninstall] [--help]

Builds ivy and ivy-emulator (swift build -c release) and installs
  $PREFIX/bin/ivy
  $PREFIX/bin/ivy-emulator
    (a fake Google on 127.0.0.1 for trying ivy without an account; see the README)
  $PREFIX/share/man/man1/ivy.1
  $PREFIX/share/bash-completion/completions/ivy
  $PREFIX/share/zsh/site-functions/_ivy
  $PREFIX/share/fish/vendor_completions.d/ivy.fish
  ${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/ivy-watch.service
    (a systemd user unit running `$PREFIX/bin/ivy sync --watch`; install.sh does
    not enable it: systemctl --user daemon-reload && systemctl --user enable --now ivy-watch)
Running it again replaces them.

Options:
  --uninstall   Remove those files instead (refused while ivy-watch is enabled:
                run systemctl --user disable --now ivy-watch first).
  -h, --help    Show this help.

Environment:
  PREFIX          Where to install (default: $HOME/.local).
  IVY_BUILD_PATH  Build directory, passed to swift build as --scratch-path
                  (default: the package's .build).
  IVY_BINARY      Install this already built ivy instead of building one.
  IVY_EMULATOR_BINARY
                  Install this already built ivy-emulator instead of building one
                  (default with IVY_BINARY: the ivy-emulator beside it, if any);
                  "none": install no ivy-emulator, and leave one alone on --uninstall.
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
emulator="$prefix/bin/ivy-emulator"
manpage="$prefix/share/man/man1/ivy.1"
bash_completion="$prefix/share/bash-completion/completions/ivy"
zsh_completion="$prefix/share/zsh/site-functions/_ivy"
fish_completion="$prefix/share/fish/vendor_completions.d/ivy.fish"
# systemd's user manager reads units from here; the XDG spec says to ignore a relative
# XDG_CONFIG_HOME.
config_home="${XDG_CONFIG_HOME:-}"
case "$config_home" in
    /*) ;;
    *) config_home="$HOME/.config" ;;
esac
unit_directory="$config_home/systemd/user"
unit="$unit_directory/ivy-watch.service"

if "$uninstall"; then
    # Removing an enabled unit would leave systemd's link to it dangling and the service
    # failing to start once the binary is gone; disabling it is the user's call, not ours.
    if [ -L "$unit_directory/default.target.wants/ivy-watch.service" ]; then
        echo "install.sh: ivy-watch is enabled; run \`systemctl --user disable --now ivy-watch\` first," \
            "then scripts/install.sh --uninstall again" >&2
        exit 1
    fi
    if [ -e "$unit" ]; then
        echo "note: if ivy-watch is running, stop it: systemctl --user stop ivy-watch"
    fi
    owned=("$binary")
    # An installer without an emulator (the release tarball's) did not put one there.
    if [ "${IVY_EMULATOR_BINARY:-}" != none ]; then
        owned+=("$emulator")
    fi
    for file in "${owned[@]}" "$manpage" "$bash_completion" "$zsh_completion" "$fish_completion" "$unit"; do
        if [ -e "$file" ] || [ -L "$file" ]; then
            rm -f "$file"
            echo "removed $file"
        else
            echo "not installed: $file"
        fi
    done
    exit 0
fi

# What to install: binaries given, else built. One build makes both: without --product,
# swift build builds every product of the package (ivy, ivy-emulator and the small ivy-soak).
built="${IVY_BINARY:-}"
built_emulator="${IVY_EMULATOR_BINARY:-}"
without_emulator=false
if [ "$built_emulator" = none ]; then
    without_emulator=true
    built_emulator=""
fi
if [ -n "$built" ] && ! "$without_emulator" && [ -z "$built_emulator" ] && [ -x "$(dirname "$built")/ivy-emulator" ]; then
    built_emulator="$(dirname "$built")/ivy-emulator"
fi
if [ -z "$built" ]; then
    build=(swift build -c release --package-path "$root")
    if [ -n "$built_emulator" ] || "$without_emulator"; then
        build+=(--product ivy)
    fi
    if [ -n "${IVY_BUILD_PATH:-}" ]; then
        build+=(--scratch-path "$IVY_BUILD_PATH")
    fi
    echo "building: ${build[*]}"
    "${build[@]}"
    bin_path="$("${build[@]}" --show-bin-path)"
    built="$bin_path/ivy"
    if [ -z "$built_emulator" ] && ! "$without_emulator"; then
        built_emulator="$bin_path/ivy-emulator"
    fi
fi
if [ ! -x "$built" ]; then
    echo "install.sh: the build did not produce $built" >&2
    exit 1
fi
if [ -n "$built_emulator" ] && [ ! -x "$built_emulator" ]; then
    echo "install.sh: no ivy-emulator program at $built_emulator" >&2
    exit 1
fi

install -d -m 0755 "$prefix/bin" "$prefix/share/man/man1" "$(dirname "$bash_completion")" \
    "$(dirname "$zsh_completion")" "$(dirname "$fish_completion")" "$unit_directory"
install -m 0755 "$built" "$binary"
if [ -n "$built_emulator" ]; then
    install -m 0755 "$built_emulator" "$emulator"
fi
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
# The unit names the binary just installed, so it runs from any PREFIX: an absolute path, with
# systemd's specifier character (%) doubled and quoted if it has spaces (systemd expands no
# $VARIABLES in the command's own path). systemd refuses to run a path with quotes, a backslash
# or control characters in it at all.
exec_path="$(cd "$prefix/bin" && pwd)/ivy"
installed=("$binary")
if [ -n "$built_emulator" ]; then
    installed+=("$emulator")
elif ! "$without_emulator"; then
    echo "note: not installing ivy-emulator: none beside $built; set IVY_EMULATOR_BINARY to install one"
fi
installed+=("$manpage" "$bash_completion" "$zsh_completion" "$fish_completion")
case "$exec_path" in
    *[\"\'\\[:cntrl:]]*)
        echo "install.sh: not installing $unit: systemd cannot run $exec_path (quotes or backslashes)" >&2
        unit_text=""
        ;;
    *)
        exec_path="${exec_path//%/%%}"
        case "$exec_path" in
            *[[:space:]]*) exec_path="\"$exec_path\"" ;;
        esac
        template="$(cat "$root/contrib/systemd/ivy-watch.service")"
        unit_text="${template//"ExecStart=%h/.local/bin/ivy "/"ExecStart=$exec_path "}"
        case "$unit_text" in
            *"ExecStart=$exec_path sync --watch"*) ;;
            *)
                echo "install.sh: contrib/systemd/ivy-watch.service has no 'ExecStart=%h/.local/bin/ivy ' line" >&2
                exit 1
                ;;
        esac
        ;;
esac
if [ -n "$unit_text" ]; then
    printf '%s\n' "$unit_text" > "$unit.tmp"
    chmod 0644 "$unit.tmp"
    mv "$unit.tmp" "$unit"
    installed+=("$unit")
fi
for file in "${installed[@]}"; do
    echo "installed $file"
done
if [ -L "$unit_directory/default.target.wants/ivy-watch.service" ]; then
    # A running watch goes on with the ivy it started with until restarted.
    echo "ivy-watch is enabled; to run the new ivy: systemctl --user daemon-reload && systemctl --user restart ivy-watch"
elif [ -n "$unit_text" ]; then
    echo "to sync continuously: systemctl --user daemon-reload && systemctl --user enable --now ivy-watch"
fi

case ":${PATH}:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on your PATH; add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
