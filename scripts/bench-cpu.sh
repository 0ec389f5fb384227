#!/usr/bin/env bash
# CPU time per request, user and system apart, of reactord builds and nginx answering the same
# POST /events (see docs/performance.md): read from /proc/PID/stat around each wrk run, so it works
# where `perf stat` has no hardware counters (scripts/bench-instructions.sh needs them). Servers are
# pinned to CPU 0 and wrk to CPU 1; runs alternate server by server, and each run prints every
# server's requests/s, CPU use, and user and system microseconds per request, then the medians of
# each server's rate over the first one's.
#
# Usage: scripts/bench-cpu.sh [NAME=BINARY ...]   (default: reactord=.build/release/reactord nginx=nginx;
#        the word nginx stands for nginx-light with Benchmarks/http/nginx.conf.template)
# Tunables (environment): RUNS=5, DURATION=4 (seconds per wrk run), CONNECTIONS=50, PORT=18301 (the
# first server's; the others count up), BUILD=0 (1: build reactord release first), WORKLOAD=increment
# (or set: the realistic ~300-byte object of Benchmarks/http/post-set.lua).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
DURATION=${DURATION:-4}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18301}
case "${WORKLOAD:-increment}" in
    increment) script=Benchmarks/http/post-events.lua ;;
    set) script=Benchmarks/http/post-set.lua ;;
    *) echo "bench-cpu: WORKLOAD is increment or set" >&2; exit 2 ;;
esac
[ "${BUILD:-0}" = 1 ] && swift build -c release --product reactord
[ $# -gt 0 ] || set -- reactord=.build/release/reactord nginx=nginx
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
for tool in wrk:wrk nginx:nginx-light taskset:util-linux; do
    command -v "${tool%%:*}" >/dev/null || {
        $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${tool##*:}" >/dev/null
    }
done

tmp=$(mktemp -d /tmp/bench-cpu.XXXXXX)
names=() ports=() pids=() started=()
cleanup() { for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$PORT
for spec in "$@"; do
    name=${spec%%=*} binary=${spec#*=}
    if [ "$binary" = nginx ]; then
        mkdir -p "$tmp/$name"
        sed -e "s|@DIR@|$tmp/$name|g" -e "s|@PORT@|$port|g" Benchmarks/http/nginx.conf.template >"$tmp/$name/nginx.conf"
        taskset -c 0 "$(command -v nginx || echo /usr/sbin/nginx)" -p "$tmp/$name" -c "$tmp/$name/nginx.conf" -e "$tmp/$name/error.log" &
    else
        [ -x "$binary" ] || { echo "bench-cpu: $binary is not an executable" >&2; exit 1; }
        taskset -c 0 "$binary" --port "$port" --log-level error >"$tmp/$name.log" 2>&1 &
    fi
    started+=($!)
    for _ in $(seq 100); do curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/" && break; sleep 0.1; done
    # nginx serves from its one worker: its CPU time is the worker's.
    pid=$!
    [ "$binary" = nginx ] && pid=$(pgrep -P "$!" | head -1)
    names+=("$name") ports+=("$port") pids+=("$pid")
    port=$((port + 1))
done

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
for i in "${!names[@]}"; do # warm-up, unmeasured
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d1s -s "$script" "http://127.0.0.1:${ports[$i]}/events" >/dev/null
done
echo "bench-cpu: ${WORKLOAD:-increment}, wrk -t1 -c$CONNECTIONS -d${DURATION}s POST /events, $RUNS runs alternating; servers on CPU 0, wrk on CPU 1"
printf '%-4s' run; for name in "${names[@]}"; do printf ' | %-27s' "$name"; done; echo
printf '%-4s' ""; for _ in "${names[@]}"; do printf ' | %7s %4s %6s %6s' "req/s" cpu "user" "sys"; done; echo "   (user, sys: µs per request)"
declare -A rates
for run in $(seq "$RUNS"); do
    printf '%-4s' "$run"
    for i in "${!names[@]}"; do
        read -r user0 sys0 <<<"$(cpu_ticks "${pids[$i]}")"
        out=$(timeout $((DURATION + 30)) taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$script" "http://127.0.0.1:${ports[$i]}/events")
        read -r user1 sys1 <<<"$(cpu_ticks "${pids[$i]}")"
        requests=$(awk '/ requests in /{ print $1 }' <<<"$out")
        rate=$(awk '/Requests\/sec/{ printf "%d", $2 }' <<<"$out")
        rates[$i]="${rates[$i]:-} $rate"
        awk -v rate="$rate" -v n="$requests" -v u=$((user1 - user0)) -v s=$((sys1 - sys0)) -v hz="$ticks" -v d="$DURATION" \
            'BEGIN { printf " | %7d %3.0f%% %6.2f %6.2f", rate, 100 * (u + s) / hz / d, u / hz / n * 1e6, s / hz / n * 1e6 }'
    done
    echo
done
. scripts/bench-lib.sh
first=$(tr ' ' '\n' <<<"${rates[0]}" | grep . | median_of)
for i in "${!names[@]}"; do
    median=$(tr ' ' '\n' <<<"${rates[$i]}" | grep . | median_of)
    printf 'median %-12s %9s req/s  %s/%s %s\n' "${names[$i]}" "$median" "${names[$i]}" "${names[0]}" "$(awk -v a="$median" -v b="$first" 'BEGIN { printf "%.3f", a / b }')"
done
