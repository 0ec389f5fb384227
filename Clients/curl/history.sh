#!/usr/bin/env bash
# Reads the events applied after a version: GET /history?since=N&limit=M. Prints one JSON line per
# event, {"version":V,"event":{...}}, oldest first (needs a server with a data directory).
#
#   history.sh            # the first 100 events after version 0
#   history.sh 41 10      # the 10 events after version 41
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

since=${1:-0}
limit=${2:-100}

curl -sS --fail-with-body ${auth[@]+"${auth[@]}"} "$url/history?since=$since&limit=$limit"
