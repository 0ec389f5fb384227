#!/usr/bin/env bash
# Idempotent retry: fires the same event twice with the same Idempotency-Key, as a client does
# when it did not get the first answer. The retry gets the first answer back, marked
# Idempotent-Replayed: true, and applies nothing. Prints:
#   first: 200 {"version":N}
#   retry: 200 {"version":N} Idempotent-Replayed: true
#
#   idempotent-retry.sh                           # a fresh key; increments /counter once
#   idempotent-retry.sh order-42 '{"type":"append","path":"/orders","value":42}'
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

key=${1:-"retry-$(date +%s)-$$-$RANDOM"}
event=${2:-'{"type":"increment","path":"/counter"}'}

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT

fire() {
    local label=$1 body status replayed
    body=$(curl -sS ${auth[@]+"${auth[@]}"} -D "$headers" -w '\n%{http_code}' \
        -H 'Content-Type: application/json' -H "Idempotency-Key: $key" \
        --data-binary "$event" "$url/events")
    status=${body##*$'\n'}
    replayed=$(tr -d '\r' < "$headers" | sed -n 's/^[Ii]dempotent-[Rr]eplayed: *//p')
    echo "$label: $status ${body%$'\n'*}${replayed:+ Idempotent-Replayed: $replayed}"
    [ "$status" -lt 400 ]
}

fire first
fire retry
