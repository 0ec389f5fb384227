#!/usr/bin/env bash
# Fires a batch in prune mode: POST /events?mode=prune applies the events that can be applied and
# reports the others. Prints {"version":N,"applied":K,"rejected":[{"index":i,"problem":{...}}]}.
#
#   fire-prune.sh                      # two increments of /counter around a remove that fails
#   fire-prune.sh '[...]'              # your own batch
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

events=${1:-'[
  {"type": "increment", "path": "/counter"},
  {"type": "remove", "path": "/no/such/member"},
  {"type": "increment", "path": "/counter"}
]'}

curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} \
    -H 'Content-Type: application/json' \
    --data-binary "$events" \
    "$url/events?mode=prune"
