#!/usr/bin/env bash
# Authentication with a bearer token: reads /state without a token, then with $REACTORD_TOKEN in
# an Authorization header, then with it as ?access_token= (for clients that cannot set headers).
# On a server with tokens, prints:
#   without a token: 401 Bearer realm="reactord"
#   Authorization: Bearer: 200 {...the state...}
#   ?access_token=: 200 {...the state...}
#
#   REACTORD_TOKEN=s3cret with-token.sh
#
# REACTORD_URL (default http://127.0.0.1:7070); REACTORD_TOKEN is required here.
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
token=${REACTORD_TOKEN:?set REACTORD_TOKEN to a token with the read scope}

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT

status=$(curl -sS -o /dev/null -D "$headers" -w '%{http_code}' "$url/state")
challenge=$(tr -d '\r' < "$headers" | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: *//p')
echo "without a token: $status${challenge:+ $challenge}"

body=$(curl -sS --fail-with-body -H "Authorization: Bearer $token" "$url/state")
echo "Authorization: Bearer: 200 $body"

body=$(curl -sS --fail-with-body -G --data-urlencode "access_token=$token" "$url/state")
echo "?access_token=: 200 $body"
