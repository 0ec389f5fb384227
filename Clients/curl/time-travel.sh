#!/usr/bin/env bash
# Reads the state as it was at a version: GET /state?version=N, optionally one sub-tree of it
# (&path=). Prints the JSON, or the problem: 410 when that version is no longer kept, 404 when the
# state has not reached it.
#
#   time-travel.sh 3              # the whole state at version 3
#   time-travel.sh 3 /counter     # /counter as it was at version 3
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

version=${1:?usage: time-travel.sh VERSION [POINTER]}
query=(--data-urlencode "version=$version")
if [ -n "${2:-}" ]; then query+=(--data-urlencode "path=$2"); fi

curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} -G "${query[@]}" "$url/state"
