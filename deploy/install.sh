#!/usr/bin/env bash
# Installs reactord and the files it serves:
#
#   $PREFIX/bin/reactord
#   $PREFIX/share/reactord/Clients/dashboard/{index.html,dashboard.css,dashboard.js}
#   $PREFIX/share/reactord/Clients/js/reactor-client.js
#   $PREFIX/share/reactord/docs/openapi.yaml (and the other docs)
#
# reactord finds the share directory beside its bin directory (<prefix>/share/reactord), so the
# layout under it is the source tree's. With --systemd it also installs the service:
#
#   /etc/systemd/system/reactord.service   (ExecStart pointing at $PREFIX/bin/reactord)
#   /etc/reactord/config.json              (every key at its default; kept if it exists)
#   /etc/reactord/env                      (mode 0600, for REACTORD_TOKENS; kept if it exists)
#
# Environment:
#   PREFIX        where to install (default /usr/local)
#   DESTDIR       a staging root prepended to every path (for packaging; default none)
#   REACTORD_BIN  the binary to install (default .build/release/reactord: `swift build -c release`)
#   UNITDIR       where the unit goes with --systemd (default /etc/systemd/system)
#
# Usage: deploy/install.sh [--systemd]
# It never starts, stops or reloads anything: it prints the commands to run next.
set -euo pipefail

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

systemd=no
for argument in "$@"; do
    case "$argument" in
        --systemd) systemd=yes ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown argument $argument" >&2; usage >&2; exit 2 ;;
    esac
done

source_dir=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
UNITDIR=${UNITDIR:-/etc/systemd/system}
binary=${REACTORD_BIN:-$source_dir/.build/release/reactord}

case "$PREFIX" in
    /*) ;;
    *) echo "install.sh: PREFIX must be an absolute path, not $PREFIX" >&2; exit 2 ;;
esac
if [ ! -x "$binary" ]; then
    echo "install.sh: no reactord binary at $binary: run \`swift build -c release --product reactord\` or set REACTORD_BIN" >&2
    exit 1
fi

bin_dir=$DESTDIR$PREFIX/bin
share_dir=$DESTDIR$PREFIX/share/reactord

# install(1) replaces the file (unlinks it and creates a new one) rather than writing over it, so a
# running reactord keeps its old binary until it restarts.
install -d -m 0755 "$bin_dir" "$share_dir/Clients/dashboard" "$share_dir/Clients/js" "$share_dir/docs"
install -m 0755 "$binary" "$bin_dir/reactord"
for file in "$source_dir"/Clients/dashboard/*; do
    [ -f "$file" ] && install -m 0644 "$file" "$share_dir/Clients/dashboard/"
done
install -m 0644 "$source_dir/Clients/js/reactor-client.js" "$share_dir/Clients/js/"
install -m 0644 "$source_dir/docs/openapi.yaml" "$source_dir"/docs/*.md "$share_dir/docs/"
echo "installed $PREFIX/bin/reactord and $PREFIX/share/reactord${DESTDIR:+ under $DESTDIR}"

if [ "$systemd" = yes ]; then
    config_dir=$DESTDIR/etc/reactord
    unit_dir=$DESTDIR$UNITDIR
    install -d -m 0755 "$config_dir" "$unit_dir"
    # The unit names /usr/local and /etc; point it at this installation.
    sed -e "s|/usr/local/bin/reactord|$PREFIX/bin/reactord|g" \
        -e "s|/usr/local/share/reactord|$PREFIX/share/reactord|g" \
        "$source_dir/deploy/reactord.service" > "$unit_dir/reactord.service.tmp"
    chmod 0644 "$unit_dir/reactord.service.tmp"
    mv "$unit_dir/reactord.service.tmp" "$unit_dir/reactord.service"
    # The operator's files are theirs once they exist: never overwritten.
    if [ ! -e "$config_dir/config.json" ]; then
        "$bin_dir/reactord" config defaults > "$config_dir/config.json.tmp"
        chmod 0644 "$config_dir/config.json.tmp"
        mv "$config_dir/config.json.tmp" "$config_dir/config.json"
    fi
    if [ ! -e "$config_dir/env" ]; then
        (umask 077 && cat > "$config_dir/env" <<'EOF'
# reactord's secrets and overrides, read by systemd (root) when it starts the service.
# Tokens: name:secret:scopes[:event-types], scopes joined by +, tokens by commas.
#REACTORD_TOKENS=dashboard:CHANGE-ME:read,ci:CHANGE-ME-TOO:read+fire
EOF
        )
    fi
    echo "installed $UNITDIR/reactord.service and /etc/reactord/{config.json,env}${DESTDIR:+ under $DESTDIR}"
    if [ -z "$DESTDIR" ]; then
        cat <<EOF
next:
  sudoedit /etc/reactord/env            # tokens
  $PREFIX/bin/reactord config check /etc/reactord/config.json
  sudo systemctl daemon-reload && sudo systemctl enable --now reactord
EOF
    fi
fi
