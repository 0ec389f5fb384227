#!/usr/bin/env bash
# Fires one event: POST /events with a JSON object. Prints the answer, {"version":N}.
#
#   fire-event.sh                                         # increments /counter
#   fire-event.sh '{"type":"set","path":"/motd","value":"hello"}'
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

event=${1:-'{"type":"increment","path":"/counter"}'}

curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} \
    -H 'Content-Type: application/json' \
    --data-binary "$event" \
    "$url/events"
