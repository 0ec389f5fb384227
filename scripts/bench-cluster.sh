#!/usr/bin/env bash
# What the cluster mode costs against one node with its own journal, and how late a node sees the
# events another one took; see docs/cluster.md and docs/performance.md.
#
# Started once, side by side on 127.0.0.1:
#   single   one reactord with --data-dir (under .build/, not /tmp) --fsync batch
#   cluster  one redis-server (--appendonly yes --appendfsync always, its dir under .build/) and
#            three reactord nodes n1, n2, n3 on it (--redis ... --redis-key bench --node-name nI)
# Then RUNS rounds, each one of every measurement in turn, so that a noisy moment hits all alike:
#   A. single:            wrk -tTHREADS -cCONNECTIONS -dDURATION POST /events (WORKLOAD) on the node
#   B. cluster-always:    three wrk at once, one per node, CONNECTIONS/3 connections each; acknowledged
#                         events/s summed over the nodes, each node's share, min/max share
#   C. cluster-everysec:  the same, after CONFIG SET appendfsync everysec on the same redis-server
#                         (set back to always after it)
#   D. fan-out delay, under appendfsync always and under everysec: a WebSocket subscriber on n1 and
#      one on n2, events POSTed to n1 at FANOUT_RATE/s for FANOUT_SECONDS
#      (Benchmarks/cluster/fanout_delay.py); per event, the delay from the POST being written to
#      the patch arriving, p50 and p99 for n1 -> n1 (A->A) and n1 -> n2 (A->B).
# "Acknowledged" is a 2xx answer: wrk's requests less its non-2xx answers. Events per append: the
# acknowledged events over the Redis EVALSHA calls in the run (INFO commandstats, reset before each
# run: the compare-and-append script, conflicting attempts included), and for the single node over
# its group commits (reactor_journal_append_seconds_count in /metrics: one fsync each).
# A node that stops taking writes (GET /cluster "ready": false) or does not reach the log's head
# within 30 s ends the runs: that run is left out, the summary prints the rest, the script exits 1.
# With PIN=1 on 2 cores, redis-server and every reactord share CPU 0 and the load generators CPU 1:
# the cluster gets the same one core as the single node, so this measures what coordination costs,
# not what scaling out gains.
#
# Tunables (environment):
#   DURATION=10s CONNECTIONS=50 THREADS=1 RUNS=3 WARMUP=2s   as in bench-durability.sh (CONNECTIONS
#                                    in all: each node of the cluster gets CONNECTIONS/3)
#   FANOUT_RATE=500 FANOUT_SECONDS=3 FANOUT_CONNECTIONS=16   the fan-out delay (FANOUT_SECONDS=0 skips it)
#   PIN=1 BUILD=1                    as in bench-http.sh
#   LOAD=spread                      where the cluster's load goes: spread (a third of CONNECTIONS on
#                                    each node) or n1 (all of it on n1, the others only follow: what a
#                                    writer lease would get if forwarding to it cost nothing)
#   WORKLOAD=increment               what every POST /events carries: increment (a counter,
#                                    Benchmarks/http/post-events.lua), set (an object of ~300 bytes
#                                    set at one of 64 keys of a wide document, Benchmarks/http/post-set.lua)
#                                    or keyed (the increment with an Idempotency-Key of its own per
#                                    request, Benchmarks/http/post-keyed.lua: in the cluster each key
#                                    is claimed with a SET, which the EVALSHA count leaves out)
#   REACTORD=.build/release/reactord another binary to measure (BUILD=1 still builds the release one)
#   REDIS_SERVER=redis-server
#   PORT=18290                       the single node on PORT, n1..n3 on PORT+1..PORT+3, redis on PORT+4
#   KEEP=0                           1: keep the data directories and logs (the path is printed)
# Defaults take about 2.5 minutes with the build up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-1}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2s}
FANOUT_RATE=${FANOUT_RATE:-500}
FANOUT_SECONDS=${FANOUT_SECONDS:-3}
FANOUT_CONNECTIONS=${FANOUT_CONNECTIONS:-16}
PIN=${PIN:-1}
BUILD=${BUILD:-1}
PORT=${PORT:-18290}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
KEEP=${KEEP:-0}
WORKLOAD=${WORKLOAD:-increment}
LOAD=${LOAD:-spread}
case "$WORKLOAD" in
    increment) script=Benchmarks/http/post-events.lua ;;
    set) script=Benchmarks/http/post-set.lua ;;
    keyed) script=Benchmarks/http/post-keyed.lua ;;
    *) echo "bench-cluster: WORKLOAD is increment, set or keyed, not $WORKLOAD" >&2; exit 2 ;;
esac
KEY=bench

scripts/setup.sh
command -v wrk >/dev/null || {
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
}
if [ "$BUILD" = 1 ]; then swift build -c release --product reactord; fi
REACTORD=${REACTORD:-$root/.build/release/reactord}
[ -x "$REACTORD" ] || { echo "bench-cluster: $REACTORD is missing (BUILD=0 needs a release build, or set REACTORD)" >&2; exit 1; }
"$REACTORD" serve --help 2>/dev/null | grep -q -- '--redis-key' \
    || { echo "bench-cluster: $REACTORD has no cluster mode (serve --redis)" >&2; exit 1; }
for tool in "$REDIS_SERVER" redis-cli curl python3; do
    command -v "$tool" >/dev/null || { echo "bench-cluster: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
python3 -c 'import websockets.asyncio.client' 2>/dev/null \
    || { echo "bench-cluster: python3 lacks websockets >= 13 (scripts/setup.sh installs it)" >&2; exit 1; }

. scripts/bench-lib.sh
pin_cpus

nodes=(n1 n2 n3)
declare -A port
port[single]=$PORT; port[n1]=$((PORT + 1)); port[n2]=$((PORT + 2)); port[n3]=$((PORT + 3))
REDIS_PORT=$((PORT + 4))
for p in "$PORT" "${port[n1]}" "${port[n2]}" "${port[n3]}" "$REDIS_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        echo "bench-cluster: something already listens on 127.0.0.1:$p (set PORT)" >&2; exit 1
    fi
done

# The data directories go beside the repository, on the disk a deployment would use, not on /tmp
# (which may be a tmpfs, where fsync costs nothing).
mkdir -p "$root/.build"
tmp=$(mktemp -d "$root/.build/bench-cluster.XXXXXX")
mkdir -p "$tmp/redis"
server_pids=() redis_pid="" load_pids=()
stop_pids() { # pid... : SIGTERM, up to 10 s to exit, then SIGKILL
    local pid
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "$@"; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
cleanup() {
    # The load generators, then the nodes (while Redis is still up: they stop cleanly), then Redis.
    stop_pids "${load_pids[@]}"
    stop_pids "${server_pids[@]}"
    [ -z "$redis_pid" ] || stop_pids "$redis_pid"
    if [ "$KEEP" = 1 ]; then echo "bench-cluster: logs and data kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

commands=() # every distinct command line run, for the record at the end
record() { local line; line=$(printf '%q ' "$@"); line=${line% }; [[ " ${commands[*]-} " == *" $line "* ]] || commands+=("$line"); }
rcli() { timeout 10 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@" | tr -d '\r'; }

# --- start everything ---------------------------------------------------------------------------

redis_cmd=("$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$tmp/redis" --appendonly yes
    --appendfsync always --save "" --daemonize no --logfile "")
record "${cpu_server[@]}" "${redis_cmd[@]}"
"${cpu_server[@]}" "${redis_cmd[@]}" >"$tmp/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do
    kill -0 "$redis_pid" 2>/dev/null || { echo "bench-cluster: redis-server exited at start" >&2; cat "$tmp/redis.log" >&2; exit 1; }
    [ "$(rcli PING 2>/dev/null)" = PONG ] && break
    sleep 0.1
done
[ "$(rcli PING 2>/dev/null)" = PONG ] || { echo "bench-cluster: redis-server did not answer within 10 s" >&2; exit 1; }

wait_for() { # name pid port
    for _ in $(seq 300); do
        kill -0 "$2" 2>/dev/null || { echo "bench-cluster: $1 exited at start" >&2; cat "$tmp/$1.log" >&2; exit 1; }
        curl -s -o /dev/null -f -m 1 "http://127.0.0.1:$3/readyz" && return 0
        sleep 0.1
    done
    echo "bench-cluster: $1 was not ready within 30 s" >&2; cat "$tmp/$1.log" >&2; exit 1
}
start_server() { # name args...
    local name=$1; shift
    local cmd=("$REACTORD" serve --port "${port[$name]}" --log-level warning "$@")
    record "${cpu_server[@]}" "${cmd[@]}"
    "${cpu_server[@]}" "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
    server_pids+=($!)
    wait_for "$name" "$!" "${port[$name]}"
}
start_server single --data-dir "$tmp/single" --fsync batch
for node in "${nodes[@]}"; do
    start_server "$node" --redis "redis://127.0.0.1:$REDIS_PORT" --redis-key "$KEY" --node-name "$node"
done

# --- measuring helpers ----------------------------------------------------------------------------

json_field() { # field : a scalar member of the flat JSON object on standard input ("n/a" when absent)
    local v
    v=$(sed -n -E "s/.*\"$1\":\"?([^\",}]*).*/\1/p")
    echo "${v:-n/a}"
}
cluster_field() { curl -s -m 5 "http://127.0.0.1:${port[$1]}/cluster" | json_field "$2" || true; }
redis_head() { rcli HGET "reactor:{$KEY}:meta" version; }
single_version() { curl -s -m 5 "http://127.0.0.1:${port[single]}/readyz" | json_field version || true; }
metric() { # server name : a metric's value from /metrics (0 when absent)
    curl -s -m 5 "http://127.0.0.1:${port[$1]}/metrics" | awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }'
}
cmdstat() { # command field : from INFO commandstats (0 when absent)
    rcli INFO commandstats | awk -F'[:,=]' -v c="cmdstat_$1" -v f="$2" \
        '$1 == c { for (i = 2; i < NF; i += 2) if ($i == f) v = $(i + 1) } END { print v + 0 }'
}
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else print a - b }'; }
divide() { awk -v a="$1" -v b="$2" -v f="${3:-%.3f}" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf f "\n", a / b }'; }

# A cluster that stopped being one: a node that refuses writes (GET /cluster's "ready" false, with
# its reason), or that does not reach the log's head. Once set, the runs stop: numbers from such a
# cluster measure something else. The summary still prints, and the script exits 1.
broken=""
unready_nodes() { # -> "name: its /cluster" per node not ready
    local node info
    for node in "${nodes[@]}"; do
        info=$(curl -s -m 5 "http://127.0.0.1:${port[$node]}/cluster" || true)
        [ "$(json_field ready <<<"$info")" = true ] || echo "$node: ${info:-no answer}"
    done
}
check_cluster() { # what : notes and sets broken when a node is not ready
    local bad
    bad=$(unready_nodes)
    [ -n "$bad" ] || return 0
    broken="$1"
    while read -r l; do note "$1: node not ready: $l"; done <<<"$bad"
    return 1
}
# Every node at the head of the log: what the previous run left behind is applied before the next.
converge() { # what
    local deadline=$((SECONDS + 30)) head node behind
    while :; do
        head=$(redis_head) behind=""
        for node in "${nodes[@]}"; do
            [ "$(cluster_field "$node" version)" = "$head" ] || behind+=" $node"
        done
        [ -n "$behind" ] || return 0
        [ "$SECONDS" -lt "$deadline" ] || break
        sleep 0.1
    done
    broken="$1"
    note "$1:$behind did not reach the log's head ($head) within 30 s"
    return 1
}
set_appendfsync() {
    record redis-cli -h 127.0.0.1 -p "$REDIS_PORT" CONFIG SET appendfsync "$1"
    [ "$(rcli CONFIG SET appendfsync "$1")" = OK ] || { echo "bench-cluster: CONFIG SET appendfsync $1 failed" >&2; exit 1; }
    [ "$(rcli CONFIG GET appendfsync | tail -1)" = "$1" ] || { echo "bench-cluster: appendfsync is not $1" >&2; exit 1; }
}

per_node_connections=$(( CONNECTIONS / 3 )); [ "$per_node_connections" -ge 1 ] || per_node_connections=1
case "$LOAD" in
    spread) loaded=("${nodes[@]}") ;;
    n1) loaded=(n1) per_node_connections=$CONNECTIONS ;;
    *) echo "bench-cluster: LOAD is spread or n1, not $LOAD" >&2; exit 2 ;;
esac
wrk_cmd() { # port connections duration
    local threads=$THREADS
    [ "$threads" -le "$2" ] || threads=$2
    # The keyed workload's keys begin with the port and a number of this wrk's own (start_wrk
    # counts them): no two wrk processes, at once or one after another, send the same key.
    echo wrk -t"$threads" -c"$2" -d"$3" -s "$script" "http://127.0.0.1:$1/events" -- "$1-$$-$wrk_runs"
}
wrk_runs=0
start_wrk() { # port connections duration output
    local cmd
    wrk_runs=$((wrk_runs + 1))
    read -r -a cmd <<<"$(wrk_cmd "$1" "$2" "$3")"
    record "${cpu_client[@]}" "${cmd[@]}"
    timeout $(( $(seconds "$3") + 30 )) "${cpu_client[@]}" "${cmd[@]}" >"$4" 2>&1 &
    load_pids+=($!)
}
wait_load() { local pid; for pid in "${load_pids[@]}"; do wait "$pid" || true; done; load_pids=(); }
parse_wrk() { # file -> "acked acked/s non2xx socket-errors"
    awk '/ requests in / { n = $1; t = $4; sub(/,$/, "", t)
             if (t ~ /ms$/) s = t / 1000; else if (t ~ /us$/) s = t / 1e6; else if (t ~ /m$/) s = t * 60; else s = t + 0 }
         /Non-2xx or 3xx responses:/ { bad = $NF }
         /Socket errors:/ { for (i = 3; i <= NF; i++) { gsub(/,/, "", $i); if ($i ~ /^[0-9]+$/) err += $i } }
         END { if (n == "" || s == 0) { print "n/a n/a n/a n/a"; exit }
               printf "%d %.1f %d %d\n", n - bad, (n - bad) / s, bad, err }' "$1"
}
check_wrk() { # file
    { echo "=== $1"; cat "$1"; } >>"$tmp/wrk.log"
    if [ "$(parse_wrk "$1" | cut -d' ' -f1)" = n/a ]; then
        echo "bench-cluster: wrk printed no result; its output:" >&2; cat "$1" >&2; exit 1
    fi
}

results=()   # "name value" pairs, for the medians
notes=()     # oddities seen during the runs
note() { notes+=("$*"); echo "  ! $*"; }

row() { printf '%-4s %-17s %10s %8s %7s %9s %8s %8s %9s %5s  %s\n' "$@"; }

run_single() { # run duration measured
    local v0 c0 v1 c1 acked rate bad err versions appends
    v0=$(single_version) c0=$(metric single reactor_journal_append_seconds_count)
    start_wrk "${port[single]}" "$CONNECTIONS" "$2" "$tmp/wrk-single.out"
    wait_load
    check_wrk "$tmp/wrk-single.out"
    read -r acked rate bad err <<<"$(parse_wrk "$tmp/wrk-single.out")"
    v1=$(single_version) c1=$(metric single reactor_journal_append_seconds_count)
    [ "$3" = 1 ] || return 0
    versions=$((v1 - v0)) appends=$((c1 - c0))
    row "$1" single "$rate" "$bad" "$err" "$versions" "$appends" "$(divide "$acked" "$appends" %.2f)" - - -
    results+=("single $rate" "single.per_append $(divide "$acked" "$appends")")
    [ "$bad" = 0 ] && [ "$err" = 0 ] || note "run $1 single: $bad non-2xx answers, $err socket errors"
    [ "$versions" -ge "$acked" ] || note "run $1 single: $acked acknowledged but the version moved by $versions"
}

run_cluster() { # run policy duration measured
    local run=$1 policy=$2 node h0 h1 total=0 sum_rate=0 bad_all=0 err_all=0 lag=0 l evalsha xadd
    local -A acked rate bad err conflicts0 conflicts1
    set_appendfsync "$policy"
    check_cluster "before run $run cluster-$policy" && converge "before run $run cluster-$policy" || return 0
    for node in "${nodes[@]}"; do conflicts0[$node]=$(cluster_field "$node" conflicts); done
    rcli CONFIG RESETSTAT >/dev/null
    h0=$(redis_head)
    for node in "${loaded[@]}"; do start_wrk "${port[$node]}" "$per_node_connections" "$3" "$tmp/wrk-$node.out"; done
    wait_load
    for node in "${nodes[@]}"; do l=$(cluster_field "$node" lag); [ "$l" = n/a ] || [ "$l" -le "$lag" ] || lag=$l; done
    h1=$(redis_head)
    evalsha=$(cmdstat evalsha calls) xadd=$(cmdstat xadd calls)
    for node in "${loaded[@]}"; do
        check_wrk "$tmp/wrk-$node.out"
        read -r "acked[$node]" "rate[$node]" "bad[$node]" "err[$node]" <<<"$(parse_wrk "$tmp/wrk-$node.out")"
        total=$((total + acked[$node])) bad_all=$((bad_all + bad[$node])) err_all=$((err_all + err[$node]))
        sum_rate=$(awk -v a="$sum_rate" -v b="${rate[$node]}" 'BEGIN { printf "%.1f", a + b }')
    done
    check_cluster "run $run cluster-$policy" && converge "after run $run cluster-$policy" || true
    for node in "${nodes[@]}"; do conflicts1[$node]=$(cluster_field "$node" conflicts); done
    [ "$4" = 1 ] || return 0
    local shares="" min="" max="" c=0 s d share_results=()
    for node in "${loaded[@]}"; do
        s=$(divide "${rate[$node]}" "$sum_rate")
        shares+="${shares:+/}$(awk -v s="$s" 'BEGIN { printf "%.0f%%", s * 100 }')"
        share_results+=("$policy.share.$node $s")
        [ -n "$min" ] && awk -v a="${rate[$node]}" -v b="$min" 'BEGIN { exit !(a >= b) }' || min=${rate[$node]}
        [ -n "$max" ] && awk -v a="${rate[$node]}" -v b="$max" 'BEGIN { exit !(a <= b) }' || max=${rate[$node]}
    done
    for node in "${nodes[@]}"; do
        d=$(minus "${conflicts1[$node]}" "${conflicts0[$node]}")
        c=$(awk -v a="$c" -v b="$d" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else print a + b }')
    done
    row "$run" "cluster-$policy" "$sum_rate" "$bad_all" "$err_all" "$((h1 - h0))" "$evalsha" \
        "$(divide "$total" "$evalsha" %.2f)" "$c" "$lag" "$shares min/max $(divide "$min" "$max")${broken:+ (left out)}"
    [ "$bad_all" = 0 ] && [ "$err_all" = 0 ] || note "run $run cluster-$policy: $bad_all non-2xx answers, $err_all socket errors"
    [ "$((h1 - h0))" -ge "$total" ] || note "run $run cluster-$policy: $total acknowledged but the log's head moved by $((h1 - h0))"
    # One XADD per successful append, each holding one or more events.
    [ "$xadd" -le "$((h1 - h0))" ] || note "run $run cluster-$policy: $xadd XADDs in Redis for $((h1 - h0)) events"
    [ -z "$broken" ] || return 0
    results+=("${share_results[@]}" "$policy $sum_rate" "$policy.minmax $(divide "$min" "$max")" "$policy.per_append $(divide "$total" "$evalsha")"
        "$policy.conflicts $c" "$policy.conflict_share $(divide "$c" "$evalsha")" "$policy.lag $lag"
        "$policy.per_ok_append $(divide "$total" "$(minus "$evalsha" "$c")")")
}

fanout_cmd=()
run_fanout() { # run policy
    local out line
    set_appendfsync "$2"
    check_cluster "before run $1 fanout-$2" && converge "before run $1 fanout-$2" || return 0
    fanout_cmd=(python3 Benchmarks/cluster/fanout_delay.py --a-port "${port[n1]}" --b-port "${port[n2]}"
        --rate "$FANOUT_RATE" --seconds "$FANOUT_SECONDS" --connections "$FANOUT_CONNECTIONS" --path "/fanout_$2_$1")
    record "${cpu_client[@]}" "${fanout_cmd[@]}"
    out=$(timeout $(( ${FANOUT_SECONDS%.*} + 60 )) "${cpu_client[@]}" "${fanout_cmd[@]}" 2>&1) || true
    printf '=== fanout %s run %s\n%s\n' "$2" "$1" "$out" >>"$tmp/fanout.log"
    line=$(grep '^RESULT ' <<<"$out" || true)
    [ -n "$line" ] || { echo "bench-cluster: the fan-out helper failed:" >&2; echo "$out" | tail -20 >&2; exit 1; }
    while read -r w; do note "run $1 fanout-$2: ${w#WARNING }"; done < <(grep '^WARNING ' <<<"$out" || true)
    check_cluster "run $1 fanout-$2" || true
    eval "$(sed -e 's/^RESULT //' -e 's/\([a-z_0-9]*\)=\([^ ]*\)/local r_\1=\2;/g' <<<"$line")"
    printf '%-4s %-17s A->A p50 %s p99 %s, A->B p50 %s p99 %s ms; POST answered p50 %s ms; %s of %s acked at %s/s; client send lag p99 %s ms%s\n' \
        "$1" "fanout-$2" "$r_aa_p50_ms" "$r_aa_p99_ms" "$r_ab_p50_ms" "$r_ab_p99_ms" "$r_ack_p50_ms" "$r_acked" "$r_events" \
        "$r_achieved_rate" "$r_send_lag_p99_ms" "${broken:+ (left out)}"
    [ -z "$broken" ] || return 0
    results+=("fanout.$2.aa50 $r_aa_p50_ms" "fanout.$2.aa99 $r_aa_p99_ms" "fanout.$2.ab50 $r_ab_p50_ms" "fanout.$2.ab99 $r_ab_p99_ms"
        "fanout.$2.d50 $(awk -v a="$r_aa_p50_ms" -v b="$r_ab_p50_ms" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else printf "%.3f", b - a }')"
        "fanout.$2.d99 $(awk -v a="$r_aa_p99_ms" -v b="$r_ab_p99_ms" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else printf "%.3f", b - a }')")
}

# --- the runs -------------------------------------------------------------------------------------

echo "bench-cluster: $REACTORD"
if [ "$LOAD" = n1 ]; then cluster_load="wrk -c$per_node_connections on n1 alone, n2 and n3 following"; else cluster_load="3 wrk at once, -c$per_node_connections each"; fi
echo "bench-cluster: POST /events ($WORKLOAD) for $DURATION: single node wrk -c$CONNECTIONS; cluster: $cluster_load; $RUNS rounds, alternating"
[ ${#cpu_server[@]} -eq 0 ] || echo "bench-cluster: redis-server and every reactord on CPU 0, wrk and the fan-out client on CPU 1"
if [ "$WARMUP" != 0 ] && [ "$WARMUP" != 0s ]; then
    run_single 0 "$WARMUP" 0
    run_cluster 0 always "$WARMUP" 0
fi
[ -z "$broken" ] || RUNS=0
echo
row run config "acked ev/s" non-2xx errors versions appends "ev/append" conflicts lag "shares $(IFS=/; echo "${loaded[*]}")"
for run in $(seq "$RUNS"); do
    run_single "$run" "$DURATION" 1
    run_cluster "$run" always "$DURATION" 1
    [ -z "$broken" ] || break
    run_cluster "$run" everysec "$DURATION" 1
    [ -z "$broken" ] || break
    if [ "$FANOUT_SECONDS" != 0 ]; then
        run_fanout "$run" always
        [ -z "$broken" ] || break
        run_fanout "$run" everysec
        [ -z "$broken" ] || break
    fi
done
set_appendfsync always

# --- the summary ----------------------------------------------------------------------------------

median() { printf '%s\n' "${results[@]}" | awk -v s="$1" '$1 == s && $2 != "n/a" { print $2 }' | median_of; }
single=$(median single) always=$(median always) everysec=$(median everysec)
echo
echo "Medians of $RUNS rounds ($DURATION each; acknowledged POST /events per second):"
printf '  %-44s %10s\n' "single node, --data-dir, --fsync batch" "$single"
printf '  %-44s %10s   %s x single\n' "cluster of 3, redis appendfsync always" "$always" "$(divide "$always" "$single")"
printf '  %-44s %10s   %s x single, %s x always\n' "cluster of 3, redis appendfsync everysec" "$everysec" \
    "$(divide "$everysec" "$single")" "$(divide "$everysec" "$always")"
echo
echo "Per-node shares of the cluster's acknowledged events (each node loaded had $per_node_connections connections):"
for policy in always everysec; do
    line=""
    for node in "${loaded[@]}"; do line+="$node $(awk -v s="$(median "$policy.share.$node")" 'BEGIN { if (s == "n/a") print s; else printf "%.1f%%", s * 100 }')   "; done
    printf '  %-9s %s min/max %s\n' "$policy" "$line" "$(median "$policy.minmax")"
done
echo
echo "Events per append (acknowledged events / appends, medians):"
printf '  %-44s %s\n' "single node: per journal group commit (fsync)" "$(median single.per_append)"
printf '  %-44s %s\n' "cluster always: per Redis EVALSHA" "$(median always.per_append)"
printf '  %-44s %s\n' "cluster everysec: per Redis EVALSHA" "$(median everysec.per_append)"
printf '  %-44s always %s, everysec %s\n' "cluster: per EVALSHA that was not a conflict" "$(median always.per_ok_append)" "$(median everysec.per_ok_append)"
printf '  %-44s always %s, everysec %s (all nodes; %s and %s of the EVALSHAs)\n' "append conflicts per run" \
    "$(median always.conflicts)" "$(median everysec.conflicts)" "$(median always.conflict_share)" "$(median everysec.conflict_share)"
printf '  %-44s always %s, everysec %s (median, events)\n' "largest node lag when the load stopped" "$(median always.lag)" "$(median everysec.lag)"
if [ "$FANOUT_SECONDS" != 0 ]; then
    echo
    echo "Fan-out delay, POST written on n1 -> patch received (ms, medians of the runs' percentiles;"
    echo "$FANOUT_RATE events/s for ${FANOUT_SECONDS}s, $FANOUT_CONNECTIONS connections to n1):"
    printf '  %-9s %10s %10s %10s %10s %12s %12s\n' "" "A->A p50" "A->A p99" "A->B p50" "A->B p99" "B-A p50" "B-A p99"
    for policy in always everysec; do
        printf '  %-9s %10s %10s %10s %10s %12s %12s\n' "$policy" "$(median "fanout.$policy.aa50")" "$(median "fanout.$policy.aa99")" \
            "$(median "fanout.$policy.ab50")" "$(median "fanout.$policy.ab99")" "$(median "fanout.$policy.d50")" "$(median "fanout.$policy.d99")"
    done
fi
echo
echo "After the runs, GET /cluster:"
for node in "${nodes[@]}"; do
    printf '  %s: %s\n' "$node" "$(curl -s -m 5 "http://127.0.0.1:${port[$node]}/cluster")"
done
echo "  redis: head $(redis_head), stream length $(rcli XLEN "reactor:{$KEY}:log"), appendfsync $(rcli CONFIG GET appendfsync | tail -1)"
# What the servers logged at --log-level warning, and what Redis said of warnings, errors, slow
# fsyncs (less its usual warning about memory overcommit).
{ grep -H . "$tmp"/single.log "$tmp"/n?.log || true
  grep -H -iE 'warning|error|fail|too long|slow' "$tmp"/redis.log | grep -v 'overcommit' || true
} | sed "s|^$tmp/||" >"$tmp/problems.txt"
if [ -s "$tmp/problems.txt" ]; then
    notes+=("$(wc -l <"$tmp/problems.txt") lines logged by the servers while running; the first ones:")
    while read -r l; do notes+=("  $l"); done < <(head -5 "$tmp/problems.txt" | cut -c1-300)
fi
if [ ${#notes[@]} -gt 0 ]; then
    echo
    echo "Noticed during the runs:"
    printf '  %s\n' "${notes[@]}"
fi
echo
echo "Commands (the wrk script: $script; appendfsync switched with CONFIG SET):"
printf '  %s\n' "${commands[@]}"
if [ -n "$broken" ]; then
    echo
    echo "bench-cluster: the cluster broke ($broken): the runs stopped there and that run is left out of the medians" >&2
    exit 1
fi
