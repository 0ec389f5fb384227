#!/usr/bin/env bash
# Sets everything up, builds reactord (release) and runs it on its embedded default:
# 127.0.0.1:7070, the state a JSON document. Extra arguments go to reactord.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product reactord
exec .build/release/reactord "$@"
