#!/usr/bin/env bash
# Conditional GET: reads the state and its ETag (the version, quoted), then asks again with
# If-None-Match. Unchanged, the server answers 304 with no body; changed, 200 with the new state.
# Prints:
#   ETag: "N"
#   If-None-Match: "N" -> 304 Not Modified
# (or "-> 200 <the new state>" if an event landed in between).
#
#   conditional-get.sh
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT

curl -sS --fail-with-body ${auth[@]+"${auth[@]}"} -D "$headers" -o /dev/null "$url/state"
etag=$(tr -d '\r' < "$headers" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p')
echo "ETag: $etag"

body=$(curl -sS --fail-with-body ${auth[@]+"${auth[@]}"} -H "If-None-Match: $etag" -w '\n%{http_code}' "$url/state")
status=${body##*$'\n'}
if [ "$status" = 304 ]; then
    echo "If-None-Match: $etag -> 304 Not Modified"
else
    echo "If-None-Match: $etag -> $status ${body%$'\n'*}"
fi
