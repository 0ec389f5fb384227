#!/usr/bin/env bash
# What the journal costs, and how long recovery takes; see docs/performance.md.
#
# 1. POST /events requests/s on three reactord servers side by side: --fsync batch, --fsync never,
#    and no data directory, runs alternating (batch, never, memory, batch, ...) so a noisy moment
#    hits all alike; the table gives the medians and their ratios to the one without a journal.
# 2. Start-up time on a journal of EVENTS events (made with reactord import), then on the same
#    state after reactord compact (one snapshot, no journal); medians of RECOVERY_RUNS.
#
# Tunables (environment):
#   DURATION=10s CONNECTIONS=50 THREADS=1 RUNS=3 WARMUP=2s   as in bench-http.sh
#   EVENTS=1000000 RECOVERY_RUNS=3   the recovery part (EVENTS=0 skips it)
#   PIN=1 BUILD=1                    as in bench-http.sh
#   PORT=18090                       ports PORT, PORT+1, PORT+2 on 127.0.0.1
# Defaults take about 3 minutes with the build up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-1}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2s}
EVENTS=${EVENTS:-1000000}
RECOVERY_RUNS=${RECOVERY_RUNS:-3}
PIN=${PIN:-1}
BUILD=${BUILD:-1}
PORT=${PORT:-18090}

scripts/setup.sh
command -v wrk >/dev/null || {
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
}
if [ "$BUILD" = 1 ]; then swift build -c release --product reactord; fi
REACTORD=$root/.build/release/reactord
[ -x "$REACTORD" ] || { echo "bench-durability: $REACTORD is missing (BUILD=0 needs a release build)" >&2; exit 1; }

. scripts/bench-lib.sh
pin_cpus

# The data directories go beside the repository, on the disk a deployment would use, not on /tmp
# (which may be a tmpfs, where fsync costs nothing).
tmp=$(mktemp -d "$root/.build/bench-durability.XXXXXX")
pids=()
stop_all() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}
cleanup() { stop_all; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for() { # name pid port
    for _ in $(seq 300); do
        kill -0 "$2" 2>/dev/null || { echo "bench-durability: $1 exited at start" >&2; cat "$tmp/$1.log" >&2; exit 1; }
        curl -s -o /dev/null -m 1 "http://127.0.0.1:$3/readyz" && return 0
        sleep 0.1
    done
    echo "bench-durability: $1 did not answer within 30 s" >&2; exit 1
}

names=(batch never memory)
declare -A ports args
ports[batch]=$PORT; ports[never]=$((PORT + 1)); ports[memory]=$((PORT + 2))
args[batch]="--data-dir $tmp/batch --fsync batch"
args[never]="--data-dir $tmp/never --fsync never"
args[memory]=""
for name in "${names[@]}"; do
    # shellcheck disable=SC2086
    "${cpu_server[@]}" "$REACTORD" --port "${ports[$name]}" --log-level warning ${args[$name]} >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    wait_for "$name" "$!" "${ports[$name]}"
done

run_wrk() { # port duration -> "req/s non2xx"
    local out
    out=$(timeout $(( $(seconds "$2") + 30 )) "${cpu_client[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2" \
        -s Benchmarks/http/post-events.lua "http://127.0.0.1:$1/events") || true
    echo "$out" >>"$tmp/wrk.log"
    awk '/Requests\/sec:/ { rps = $2 } /Non-2xx or 3xx responses:/ { non2xx = $NF }
         END { printf "%s %d\n", rps, non2xx }' <<<"$out"
}

echo "bench-durability: wrk -t$THREADS -c$CONNECTIONS -d$DURATION POST /events (increment), $RUNS runs each, alternating"
if [ "$WARMUP" != 0 ] && [ "$WARMUP" != 0s ]; then
    for name in "${names[@]}"; do run_wrk "${ports[$name]}" "$WARMUP" >/dev/null; done
fi
results=()
printf '\n%-4s %-8s %12s %8s\n' run server "requests/s" non-2xx
for run in $(seq "$RUNS"); do
    for name in "${names[@]}"; do
        read -r rps non2xx <<<"$(run_wrk "${ports[$name]}" "$DURATION")"
        [ -n "$rps" ] || { echo "bench-durability: wrk printed nothing; see $tmp/wrk.log" >&2; cat "$tmp/wrk.log" >&2; exit 1; }
        printf '%-4s %-8s %12s %8s\n' "$run" "$name" "$rps" "$non2xx"
        results+=("$name $rps")
    done
done
median() { printf '%s\n' "${results[@]}" | awk -v s="$1" '$1 == s { print $2 }' | median_of; }
memory=$(median memory)
echo
for name in "${names[@]}"; do
    m=$(median "$name")
    printf '%-28s %12s  %s\n' "median $name" "$m" "$(awk -v a="$m" -v b="$memory" 'BEGIN { printf "%.3f x no data directory", a / b }')"
done
echo "(target: batch >= 0.5 x no data directory)"
journal_bytes=$(du -sb "$tmp/batch/journal" | cut -f1)
echo "batch journal after the runs: $journal_bytes bytes, version $(curl -s "http://127.0.0.1:${ports[batch]}/readyz")"
stop_all

[ "$EVENTS" -gt 0 ] || exit 0

# 2. Recovery. A journal of EVENTS increments spread over 1,000 paths, made by import.
echo
echo "bench-durability: recovery of $EVENTS events"
python3 - "$EVENTS" >"$tmp/export.jsonl" <<'PY'
import sys
events = int(sys.argv[1])
out = sys.stdout
out.write('{"version":0,"state":{}}\n')
for version in range(1, events + 1):
    out.write('{"version":%d,"event":{"type":"increment","path":"/counters/c%d","by":1}}\n' % (version, version % 1000))
PY
"$REACTORD" import --data-dir "$tmp/recovery" "$tmp/export.jsonl" >/dev/null
echo "journal: $(du -sb "$tmp/recovery/journal" | cut -f1) bytes in $(ls "$tmp/recovery/journal" | wc -l) segments"

startup() { # -> seconds from exec to /readyz answering
    local start end pid
    start=$(date +%s.%N)
    "${cpu_server[@]}" "$REACTORD" --port "$PORT" --log-level warning --data-dir "$tmp/recovery" >"$tmp/recovery.log" 2>&1 &
    pid=$!
    pids=("$pid")
    until curl -s -o /dev/null -m 1 "http://127.0.0.1:$PORT/readyz"; do
        kill -0 "$pid" 2>/dev/null || { echo "bench-durability: reactord exited during recovery" >&2; cat "$tmp/recovery.log" >&2; exit 1; }
        sleep 0.01
    done
    end=$(date +%s.%N)
    stop_all
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}
journal_times=()
for _ in $(seq "$RECOVERY_RUNS"); do journal_times+=("$(startup)"); done
"$REACTORD" compact --data-dir "$tmp/recovery" >/dev/null
snapshot_times=()
for _ in $(seq "$RECOVERY_RUNS"); do snapshot_times+=("$(startup)"); done
printf '%-40s %8ss   (runs: %s)\n' "start-up replaying $EVENTS events" "$(printf '%s\n' "${journal_times[@]}" | median_of)" "${journal_times[*]}"
printf '%-40s %8ss   (runs: %s)\n' "start-up from the snapshot of that state" "$(printf '%s\n' "${snapshot_times[@]}" | median_of)" "${snapshot_times[*]}"
