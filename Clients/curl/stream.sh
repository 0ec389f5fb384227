#!/usr/bin/env bash
# Follows the state live over Server-Sent Events: GET /stream with curl -N (no buffering). Prints
# each record as the server sends it: a snapshot first, then a patch per change ("data: {...}").
#
#   stream.sh                     # the whole document, until interrupted
#   stream.sh /players/0 10       # one sub-tree, for 10 seconds
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

pointer=${1:-}
seconds=${2:-0}
limit=()
if [ "$seconds" != 0 ]; then limit=(--max-time "$seconds"); fi

# curl ends with status 28 when --max-time stops it: that is how a bounded stream ends, not an error.
status=0
curl -sS -N ${auth[@]+"${auth[@]}"} ${limit[@]+"${limit[@]}"} -G --data-urlencode "path=$pointer" "$url/stream" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 28 ]; then exit "$status"; fi
