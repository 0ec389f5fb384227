#!/usr/bin/env bash
# Reads part of the state: GET /state?path=<JSON Pointer>. Prints that sub-tree as JSON, or the
# 404 problem (and exits non-zero) when the state has nothing there.
#
#   read-path.sh /player/name          # default: /counter
#   read-path.sh '/a~1b'               # RFC 6901: ~1 is "/" and ~0 is "~" inside a member name
#
# REACTORD_URL (default http://127.0.0.1:7070) and REACTORD_TOKEN (a bearer token, if the server has tokens).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}
auth=()
if [ -n "${REACTORD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $REACTORD_TOKEN"); fi

pointer=${1:-/counter}

# -G with --data-urlencode puts the pointer in the query string, percent-encoded.
curl -sS --fail-with-body -w '\n' ${auth[@]+"${auth[@]}"} -G --data-urlencode "path=$pointer" "$url/state"
