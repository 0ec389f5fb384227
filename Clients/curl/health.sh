#!/usr/bin/env bash
# Health checks, which need no token: GET /livez (the process answers) and GET /readyz (it serves,
# with the state's version). Prints:
#   {"status":"live"}
#   {"status":"ready","version":N}
#
#   health.sh
#
# REACTORD_URL (default http://127.0.0.1:7070).
set -euo pipefail
url=${REACTORD_URL:-http://127.0.0.1:7070}

curl -sS --fail-with-body -w '\n' "$url/livez"
curl -sS --fail-with-body -w '\n' "$url/readyz"
