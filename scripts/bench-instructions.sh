#!/usr/bin/env bash
# User-space instructions (and cycles) per request, for reactord's POST /events and GET /livez and for
# nginx answering the same POST: what each request costs the server's CPU, counted by `perf stat` on
# the server process alone. Instruction counts barely move with the machine's load, so they compare
# well across runs and commits where requests/s (scripts/bench-http.sh) does not.
#
# Also the locked (atomic) instructions per request, where the CPU counts them: each retain and
# release of a Swift object is one, and at 20 cycles or so each they weigh far more than their share
# of the instructions. AMD: event 0x25 (LsLocks), raw r0f25; Intel: MEM_INST_RETIRED.LOCK_LOADS, raw
# r21d0. LOCK_EVENT=... overrides; without a working one the column is left out.
#
# Tunables (environment): DURATION=3 (seconds of wrk per case), CONNECTIONS=50, PORT=18095,
# BUILD=1 (0: use .build/release/reactord as it is). Needs perf (Debian's linux-perf) and wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
DURATION=${DURATION:-3}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18095}
BUILD=${BUILD:-1}

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
for tool in perf:linux-perf wrk:wrk nginx:nginx-light; do
    command -v "${tool%%:*}" >/dev/null || {
        $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${tool##*:}" >/dev/null
    }
done
perf stat -e instructions:u true >/dev/null 2>&1 || { echo "bench-instructions: perf cannot count instructions on this machine" >&2; exit 1; }
if [ -z "${LOCK_EVENT:-}" ]; then
    case "$(awk -F': ' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo)" in
        AuthenticAMD) LOCK_EVENT=r0f25 ;;
        GenuineIntel) LOCK_EVENT=r21d0 ;;
    esac
fi
# Kept only if perf can count it here (a virtual machine may not pass the counter through).
if [ -n "${LOCK_EVENT:-}" ] && ! perf stat -x, -e "$LOCK_EVENT:u" -- true 2>&1 | grep -q "^[0-9][0-9]*,"; then
    LOCK_EVENT=""
fi
if [ "$BUILD" = 1 ]; then swift build -c release --product reactord; fi
REACTORD=$root/.build/release/reactord

tmp=$(mktemp -d /tmp/bench-instructions.XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
echo 'wrk.method = "GET"' >"$tmp/get.lua"

# measure NAME PID URL LUA: wrk for DURATION seconds while perf counts PID's user-space work.
measure() {
    perf stat -x, -e "instructions:u,cycles:u${LOCK_EVENT:+,$LOCK_EVENT:u}" -p "$2" -o "$tmp/perf.csv" -- sleep $((DURATION + 1)) &
    local perf_pid=$!
    sleep 0.2
    local out requests
    out=$(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$4" "$3")
    wait $perf_pid
    requests=$(awk '/ requests in /{print $1}' <<<"$out")
    awk -F, -v n="$requests" -v name="$1" -v rps="$(awk '/Requests\/sec/{print $2}' <<<"$out")" -v lock_event="${LOCK_EVENT:-}" '
        $3 == "instructions:u" { i = $1 } $3 == "cycles:u" { c = $1 } lock_event != "" && $3 == lock_event ":u" { l = $1 }
        END {
            printf "%-26s %10d requests %12.0f req/s %10.0f instructions/request %9.0f cycles/request", name, n, rps, i / n, c / n
            if (lock_event != "") printf " %7.1f locked/request", l / n
            printf "\n"
        }' "$tmp/perf.csv"
}

wait_port() { for _ in $(seq 100); do curl -s -o /dev/null -m 1 "$1" && return 0; sleep 0.1; done; echo "no answer on $1" >&2; exit 1; }

"$REACTORD" --port "$PORT" --log-level warning >"$tmp/reactord.log" 2>&1 &
server_pid=$!
wait_port "http://127.0.0.1:$PORT/livez"
measure "reactord POST /events" "$server_pid" "http://127.0.0.1:$PORT/events" Benchmarks/http/post-events.lua
measure "reactord GET /livez" "$server_pid" "http://127.0.0.1:$PORT/livez" "$tmp/get.lua"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true

mkdir -p "$tmp/nginx"
sed -e "s|@DIR@|$tmp/nginx|g" -e "s|@PORT@|$PORT|g" Benchmarks/http/nginx.conf.template >"$tmp/nginx/nginx.conf"
"$(command -v nginx || echo /usr/sbin/nginx)" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
server_pid=$!
wait_port "http://127.0.0.1:$PORT/"
worker=$(pgrep -P "$server_pid" | head -1)
measure "nginx POST /events" "$worker" "http://127.0.0.1:$PORT/events" Benchmarks/http/post-events.lua
