#!/usr/bin/env bash
# Sets everything up, builds reactord (release) and runs it on its embedded default:
# 127.0.0.1:7070, the state a JSON document kept in ./data (journal and snapshots; set
# REACTORD_DATA_DIR or pass --data-dir to use another). Extra arguments go to reactord.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product reactord
export REACTORD_DATA_DIR=${REACTORD_DATA_DIR:-data}
exec .build/release/reactord "$@"
