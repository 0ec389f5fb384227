#!/usr/bin/env bash
# Reads the whole state: GET /state. Prints the JSON document.
#
#   read-state.sh
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} "$url/state"
