#!/usr/bin/env bash
# Optimistic concurrency with a JSON Patch "test": reads a number, then fires a patch that tests
# it still holds what was read and replaces it with that plus one. If another client changed it in
# between, the server answers 409 (/problems/precondition-failed) and applies nothing; the script
# reads again and retries, up to 5 times. Prints one line per attempt, e.g.:
#   /counter: 3 -> 4 {"version":9}
#   /counter: 4 changed meanwhile (409), retrying
#
#   optimistic-update.sh               # default: /counter, which must hold an integer
#   optimistic-update.sh /player/level
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

pointer=${1:-/counter}

for attempt in 1 2 3 4 5; do
    current=$(curl -sS --fail-with-body ${auth[@]+"${auth[@]}"} -G --data-urlencode "path=$pointer" "$url/state")
    if ! [[ $current =~ ^-?[0-9]+$ ]]; then
        echo "$pointer holds $current, not an integer" >&2
        exit 1
    fi
    next=$((current + 1))
    patch="{\"type\":\"patch\",\"ops\":[{\"op\":\"test\",\"path\":\"$pointer\",\"value\":$current},{\"op\":\"replace\",\"path\":\"$pointer\",\"value\":$next}]}"
    body=$(curl -sS ${auth[@]+"${auth[@]}"} -w '\n%{http_code}' \
        -H 'Content-Type: application/json' --data-binary "$patch" "$url/events")
    status=${body##*$'\n'}
    body=${body%$'\n'*}
    case $status in
        200) echo "$pointer: $current -> $next $body"; exit 0 ;;
        409) echo "$pointer: $current changed meanwhile (409), retrying" ;;
        *) echo "$status $body" >&2; exit 1 ;;
    esac
done
echo "gave up after 5 attempts" >&2
exit 1
