#!/usr/bin/env bash
# Fires a batch: POST /events with a JSON array, applied all-or-nothing (the first event that fails
# rejects the whole batch, and nothing is applied). Prints {"version":N,"applied":K}.
#
#   fire-batch.sh                      # sets /player, levels it up, appends to /log
#   fire-batch.sh '[{"type":"increment","path":"/a"},{"type":"increment","path":"/b"}]'
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

events=${1:-'[
  {"type": "set", "path": "/player", "value": {"name": "Ayla", "level": 1}},
  {"type": "increment", "path": "/player/level"},
  {"type": "append", "path": "/log", "value": "Ayla reached level 2"}
]'}

curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} \
    -H 'Content-Type: application/json' \
    --data-binary "$events" \
    "$url/events"
