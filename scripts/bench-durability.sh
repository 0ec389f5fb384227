#!/usr/bin/env bash
# What the journal costs, and how long recovery takes; see docs/performance.md.
#
# 1. POST /events requests/s on six servers side by side: reactord as README's command runs it (a
#    data directory and nothing else: --fsync batch, and a line logged for each request and event),
#    then, with --log-level warning, --fsync batch, --fsync always, --fsync never and no data
#    directory, and nginx answering 200 (the ceiling of an HTTP server on this machine). Two
#    workloads: the increment (Benchmarks/http/post-events.lua) and the realistic set of a ~300-byte
#    object at one of 64 keys (Benchmarks/http/post-set.lua). Runs alternate (default, batch,
#    always, never, memory, nginx, default, ...) so a noisy moment hits all alike; the table gives
#    the medians, their ratios to the server without a journal and to nginx, and for --fsync batch
#    the events per fsync (one group commit each; --fsync always syncs every request).
# 2. Start-up time on a journal of EVENTS events (made with reactord import), then on the same
#    state after reactord compact (one snapshot, no journal); medians of RECOVERY_RUNS.
#
# Tunables (environment):
#   DURATION=10s CONNECTIONS=50 THREADS=1 RUNS=3 WARMUP=2s   as in bench-http.sh
#   WORKLOADS="increment set"        which workloads part 1 runs; also "keyed": the increment with
#                                    an Idempotency-Key of its own per request (Benchmarks/http/post-keyed.lua),
#                                    and "array": requests of five events each (Benchmarks/http/post-array.lua)
#   EVENTS=1000000 RECOVERY_RUNS=3   the recovery part (EVENTS=0 skips it)
#   PIN=1 BUILD=1                    as in bench-http.sh
#   PORT=18090                       ports PORT to PORT+5 on 127.0.0.1
# Defaults take about 7 minutes with the build up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-1}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2s}
WORKLOADS=${WORKLOADS:-increment set}
EVENTS=${EVENTS:-1000000}
RECOVERY_RUNS=${RECOVERY_RUNS:-3}
PIN=${PIN:-1}
BUILD=${BUILD:-1}
PORT=${PORT:-18090}

scripts/setup.sh
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
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

names=(default batch always never memory nginx)
declare -A ports args
ports[batch]=$PORT; ports[always]=$((PORT + 1)); ports[never]=$((PORT + 2)); ports[memory]=$((PORT + 3)); ports[nginx]=$((PORT + 4))
ports[default]=$((PORT + 5))
# `default` logs every request and event, to a file here (a terminal would cost more).
args[default]="--data-dir $tmp/default"
args[batch]="--log-level warning --data-dir $tmp/batch --fsync batch"
args[always]="--log-level warning --data-dir $tmp/always --fsync always"
args[never]="--log-level warning --data-dir $tmp/never --fsync never"
args[memory]="--log-level warning"
for name in default batch always never memory; do
    # shellcheck disable=SC2086
    "${cpu_server[@]}" "$REACTORD" --port "${ports[$name]}" ${args[$name]} >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    wait_for "$name" "$!" "${ports[$name]}"
done
# nginx: one worker answering 200 to everything (Benchmarks/http/nginx.conf.template).
mkdir -p "$tmp/nginx"
sed -e "s|@DIR@|$tmp/nginx|g" -e "s|@PORT@|${ports[nginx]}|" Benchmarks/http/nginx.conf.template >"$tmp/nginx/nginx.conf"
"${cpu_server[@]}" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" >"$tmp/nginx.log" 2>&1 &
pids+=($!)
wait_for nginx "$!" "${ports[nginx]}"

metric() { # name metric : its value in the server's /metrics (0 when absent)
    curl -s -m 5 "http://127.0.0.1:${ports[$1]}/metrics" | awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }'
}
run_wrk() { # port duration script -> "req/s non2xx"
    local out
    out=$(timeout $(( $(seconds "$2") + 30 )) "${cpu_client[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2" \
        -s "$3" "http://127.0.0.1:$1/events") || true
    echo "$out" >>"$tmp/wrk.log"
    awk '/Requests\/sec:/ { rps = $2 } /Non-2xx or 3xx responses:/ { non2xx = $NF }
         END { printf "%s %d\n", rps, non2xx }' <<<"$out"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "n/a" || b == 0 || a == "n/a") print "n/a"; else printf "%.3f", a / b }'; }

fsync_groups=()
for workload in $WORKLOADS; do
    events_per_request=1
    case $workload in
        increment) script=Benchmarks/http/post-events.lua ;;
        set) script=Benchmarks/http/post-set.lua ;;
        keyed) script=Benchmarks/http/post-keyed.lua ;;
        array) script=Benchmarks/http/post-array.lua; events_per_request=5 ;;
        *) echo "bench-durability: a workload is increment, set, keyed or array, not $workload" >&2; exit 2 ;;
    esac
    echo
    echo "bench-durability: $workload, wrk -t$THREADS -c$CONNECTIONS -d$DURATION -s $script POST /events, $RUNS runs each, alternating"
    if [ "$WARMUP" != 0 ] && [ "$WARMUP" != 0s ]; then
        for name in "${names[@]}"; do run_wrk "${ports[$name]}" "$WARMUP" "$script" >/dev/null; done
    fi
    results=()
    printf '\n%-4s %-8s %12s %8s %14s\n' run server "requests/s" non-2xx "events/fsync"
    for run in $(seq "$RUNS"); do
        for name in "${names[@]}"; do
            appends=0
            case $name in batch|default) appends=$(metric "$name" reactor_journal_append_seconds_count) ;; esac
            read -r rps non2xx <<<"$(run_wrk "${ports[$name]}" "$DURATION" "$script")"
            [ -n "$rps" ] || { echo "bench-durability: wrk printed nothing; see $tmp/wrk.log" >&2; cat "$tmp/wrk.log" >&2; exit 1; }
            per_fsync=""
            case $name in
                batch|default) per_fsync=$(awk -v r="$rps" -v d="$DURATION" -v e="$events_per_request" -v a="$(( $(metric "$name" reactor_journal_append_seconds_count) - appends ))" \
                    'BEGIN { sub("s", "", d); if (a > 0) printf "%.1f", r * e * d / a; else print "n/a" }') ;;
                always) per_fsync=$events_per_request ;;
            esac
            printf '%-4s %-8s %12s %8s %14s\n' "$run" "$name" "$rps" "$non2xx" "$per_fsync"
            results+=("$name $rps")
            [ "$name" != batch ] || fsync_groups+=("$workload $per_fsync")
        done
    done
    median() { printf '%s\n' "${results[@]}" | awk -v s="$1" '$1 == s { print $2 }' | median_of; }
    memory=$(median memory)
    nginx=$(median nginx)
    echo
    printf '%-16s %12s %22s %14s\n' "$workload" "median req/s" "x no data directory" "x nginx"
    for name in "${names[@]}"; do
        m=$(median "$name")
        printf '%-16s %12s %22s %14s\n' "$name" "$m" "$(ratio "$m" "$memory")" "$(ratio "$m" "$nginx")"
    done
    echo "events per fsync with --fsync batch (median): $(printf '%s\n' "${fsync_groups[@]}" | awk -v w="$workload" '$1 == w { print $2 }' | median_of)"
    echo "(targets: batch >= 0.8 x no data directory; memory >= 0.9 x nginx on the set workload)"
done
echo
echo "batch journal after the runs: $(du -sb "$tmp/batch/journal" | cut -f1) bytes, $(curl -s "http://127.0.0.1:${ports[batch]}/readyz")"
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
