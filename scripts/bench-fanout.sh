#!/usr/bin/env bash
# Fan-out to WebSocket subscribers: reactord against a Go server on gorilla/websocket
# (Benchmarks/gorilla-baseline), measured by reactor-bench (Benchmarks/ReactorBench); see
# docs/performance.md. For each subscriber count, runs alternate (reactord, go, reactord, ...), each
# on a freshly started server, so a noisy moment on the machine hits both alike. The table gives
# the medians and reactord/go for the server's CPU per push.
#
# Tunables (environment):
#   SUBSCRIBERS="1000 10000"   subscriber counts
#   EVENTS=200                 events per run (each goes to every subscriber)
#   RUNS=3                     runs per server and subscriber count
#   WINDOW=1                   events not yet delivered to every subscriber, at most
#   REACTORD_PORT=18180 GO_PORT=18181   ports on 127.0.0.1
#   PIN=0                      1: servers on CPU 0, reactor-bench on CPU 1 (Go then runs GOMAXPROCS=1)
#   BUILD=1                    0: use the binaries as they are
#   TIMEOUT=300                seconds one reactor-bench run may take
#   DEFLATE_SUBSCRIBERS=10000  then reactord alone, with and without permessage-deflate, on a
#                              realistic state (16 players, a 4 KB snapshot; each event sets one
#                              player to a ~300-byte object): wire bytes per push and per snapshot,
#                              CPU per push (0 skips it)
# Defaults take about 3 minutes with the builds up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SUBSCRIBERS=${SUBSCRIBERS:-"1000 10000"}
EVENTS=${EVENTS:-200}
RUNS=${RUNS:-3}
WINDOW=${WINDOW:-1}
REACTORD_PORT=${REACTORD_PORT:-18180}
GO_PORT=${GO_PORT:-18181}
PIN=${PIN:-0}
BUILD=${BUILD:-1}
TIMEOUT=${TIMEOUT:-300}
DEFLATE_SUBSCRIBERS=${DEFLATE_SUBSCRIBERS:-10000}

scripts/setup.sh

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for pkg in golang-go golang-github-gorilla-websocket-dev curl; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench-fanout: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

REACTORD=$root/.build/release/reactord
BENCH=$root/.build/release/reactor-bench
GOSERVER=$root/.build-go/gorilla-baseline
if [ "$BUILD" = 1 ]; then
    swift build -c release --product reactord
    swift build -c release --product reactor-bench
    # Offline: Debian's gorilla sources under /usr/share/gocode, GOPATH mode, no module proxy.
    mkdir -p "$root/.build-go"
    (cd Benchmarks/gorilla-baseline &&
        GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$root/.build-go/cache" GOFLAGS= GOPROXY=off \
            go build -o "$GOSERVER" .)
fi
for binary in "$REACTORD" "$BENCH" "$GOSERVER"; do
    [ -x "$binary" ] || { echo "bench-fanout: $binary is missing (BUILD=0 needs the builds)" >&2; exit 1; }
done

# One descriptor per subscriber in the server and in reactor-bench, each its own process.
max=0
for n in $SUBSCRIBERS $DEFLATE_SUBSCRIBERS; do [ "$n" -gt "$max" ] && max=$n; done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((max + 256)) ]; then
    echo "bench-fanout: the open-file limit is $(ulimit -n), too low for $max subscribers" >&2; exit 1
fi

. scripts/bench-lib.sh
pin_cpus

tmp=$(mktemp -d /tmp/bench-fanout.XXXXXX)
server_pid=""
stop() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
cleanup() { stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

for port in "$REACTORD_PORT" "$GO_PORT"; do
    if curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/"; then
        echo "bench-fanout: something already answers on 127.0.0.1:$port (set REACTORD_PORT / GO_PORT)" >&2; exit 1
    fi
done

start() { # server
    local port
    if [ "$1" = reactord ]; then
        port=$REACTORD_PORT
        "${cpu_server[@]}" "$REACTORD" --host 127.0.0.1 --port "$port" --log-level warning --max-connections 20000 >"$tmp/reactord.log" 2>&1 &
    else
        port=$GO_PORT
        "${cpu_server[@]}" "$GOSERVER" -addr "127.0.0.1:$port" >"$tmp/go.log" 2>&1 &
    fi
    server_pid=$!
    for _ in $(seq 100); do
        kill -0 "$server_pid" 2>/dev/null || { echo "bench-fanout: $1 exited at start" >&2; cat "$tmp/$1.log" >&2; exit 1; }
        curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/state" && return 0
        sleep 0.1
    done
    echo "bench-fanout: $1 did not answer on port $port within 10 s" >&2; exit 1
}

results=() failures=0
printf '%-6s %-4s %-9s %9s %9s %9s %9s %9s %9s %10s %9s %8s %6s %s\n' \
    subs run server "µs/push" "user" "system" "p50 ms" "p99 ms" "max ms" "pushes/s" "RSS/sub" "gen CPU" "viol." "conflations/closed"
for n in $SUBSCRIBERS; do
    for run in $(seq "$RUNS"); do
        for server in reactord go; do
            port=$REACTORD_PORT; [ $server = go ] && port=$GO_PORT
            start $server
            out=$("${cpu_client[@]}" "$BENCH" --port "$port" --subscribers "$n" --events "$EVENTS" --window "$WINDOW" \
                --server-pid "$server_pid" --timeout "$TIMEOUT" 2>&1) && status=0 || status=$?
            echo "=== $server, $n subscribers, run $run (exit $status)" >>"$tmp/bench.log"
            echo "$out" >>"$tmp/bench.log"
            if ! kill -0 "$server_pid" 2>/dev/null; then
                echo "bench-fanout: $server died during the run; its log:" >&2; cat "$tmp/$server.log" >&2
            fi
            stop
            line=$(grep '^RESULT ' <<<"$out" || true)
            if [ "$status" -ne 0 ] || [ -z "$line" ]; then
                failures=$((failures + 1))
                echo "bench-fanout: reactor-bench failed on $server with $n subscribers (exit $status):" >&2
                echo "$out" | tail -15 >&2
                [ -n "$line" ] || continue
            fi
            grep -q '^WARNING' <<<"$out" && echo "bench-fanout: $(grep '^WARNING' <<<"$out")"
            # RESULT key=value ... into variables r_key.
            eval "$(sed -e 's/^RESULT //' -e 's/\([a-z_0-9]*\)=\([^ ]*\)/r_\1=\2;/g' <<<"$line")"
            printf '%-6s %-4s %-9s %9s %9s %9s %9s %9s %9s %10s %9s %8s %6s %s\n' "$n" "$run" "$server" \
                "$r_server_cpu_us_per_push" "$r_server_user_us_per_push" "$r_server_system_us_per_push" "$r_p50_ms" "$r_p99_ms" "$r_max_ms" "$r_pushes_per_s" \
                "$r_rss_bytes_per_subscriber" "$r_generator_cpu_share" "$r_violations" "$r_conflations/$r_closed"
            results+=("$n $server $r_server_cpu_us_per_push $r_p50_ms $r_p99_ms $r_pushes_per_s $r_rss_bytes_per_subscriber $r_violations $r_server_user_us_per_push $r_server_system_us_per_push")
        done
    done
done

median() { # subs server column
    printf '%s\n' "${results[@]}" | awk -v n="$1" -v s="$2" -v c="$3" '$1 == n && $2 == s && $c != "n/a" { print $c }' | median_of
}
echo
echo "Medians of $RUNS runs, $EVENTS events each, window $WINDOW$([ ${#cpu_client[@]} -gt 0 ] && echo ", servers on CPU 0, reactor-bench on CPU 1"):"
printf '%-6s %-9s %12s %9s %9s %10s %10s %11s %12s %10s\n' subs server "CPU µs/push" "user" "system" "p50 ms" "p99 ms" "pushes/s" "RSS/sub KiB" violations
for n in $SUBSCRIBERS; do
    for server in reactord go; do
        rss=$(median "$n" $server 7)
        printf '%-6s %-9s %12s %9s %9s %10s %10s %11s %12s %10s\n' "$n" $server "$(median "$n" $server 3)" \
            "$(median "$n" $server 9)" "$(median "$n" $server 10)" "$(median "$n" $server 4)" \
            "$(median "$n" $server 5)" "$(median "$n" $server 6)" \
            "$(awk -v b="$rss" 'BEGIN { if (b == "n/a") print b; else printf "%.2f", b / 1024 }')" \
            "$(printf '%s\n' "${results[@]}" | awk -v n="$n" -v s=$server '$1 == n && $2 == s { t += $8 } END { print t + 0 }')"
    done
done
echo
for n in $SUBSCRIBERS; do
    a=$(median "$n" reactord 3) b=$(median "$n" go 3) rss=$(median "$n" reactord 7)
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.3f", a / b }')
    printf 'N=%-6s reactord/go CPU per push: %s (target <= 0.8 at 10000)   reactord RSS per idle subscriber: %s KiB (target <= 4)\n' \
        "$n" "$ratio" "$(awk -v b="$rss" 'BEGIN { if (b == "n/a") print b; else printf "%.2f", b / 1024 }')"
done

# --- permessage-deflate on a realistic state -----------------------------------------------------
if [ "$DEFLATE_SUBSCRIBERS" -gt 0 ]; then
    players=$(python3 -c '
import json
print(json.dumps({"type": "set", "path": "/players", "value": {f"p{i}": {"name": f"Player {i}", "score": i, "level": i % 50,
    "team": "red" if i % 2 == 0 else "blue", "position": {"x": i, "y": i, "z": 0}, "inventory": ["sword", "shield", "potion of healing", "map"],
    "status": "exploring the northern caves", "lastSeen": "2026-11-26T06:00:00Z", "guild": "The Order of the Reactor"} for i in range(16)}}))')
    deflate_results=()
    echo
    echo "reactord alone, $DEFLATE_SUBSCRIBERS subscribers, realistic state, with and without permessage-deflate:"
    printf '%-4s %-8s %9s %9s %9s %10s %10s %9s
' run mode "µs/push" "user" "system" "B/push" "B/snapshot" "RSS/sub"
    for run in $(seq "$RUNS"); do
        for mode in plain deflate; do
            start reactord
            curl -s -o /dev/null -f -H 'Content-Type: application/json' --data-binary "$players" "http://127.0.0.1:$REACTORD_PORT/events" \
                || { echo "bench-fanout: the realistic state was refused" >&2; exit 1; }
            flags=(--realistic --path /players); [ $mode = deflate ] && flags+=(--deflate)
            out=$("${cpu_client[@]}" "$BENCH" --port "$REACTORD_PORT" --subscribers "$DEFLATE_SUBSCRIBERS" --events "$EVENTS" --window "$WINDOW" \
                --server-pid "$server_pid" --timeout "$TIMEOUT" "${flags[@]}" 2>&1) && status=0 || status=$?
            echo "=== reactord $mode, realistic, $DEFLATE_SUBSCRIBERS subscribers, run $run (exit $status)" >>"$tmp/bench.log"
            echo "$out" >>"$tmp/bench.log"
            stop
            line=$(grep '^RESULT ' <<<"$out" || true)
            if [ "$status" -ne 0 ] || [ -z "$line" ]; then
                failures=$((failures + 1))
                echo "bench-fanout: reactor-bench failed on reactord ($mode, realistic) (exit $status):" >&2
                echo "$out" | tail -15 >&2
                [ -n "$line" ] || continue
            fi
            eval "$(sed -e 's/^RESULT //' -e 's/\([a-z_0-9]*\)=\([^ ]*\)/r_\1=\2;/g' <<<"$line")"
            printf '%-4s %-8s %9s %9s %9s %10s %10s %9s\n' "$run" $mode "$r_server_cpu_us_per_push" "$r_server_user_us_per_push" \
                "$r_server_system_us_per_push" "$r_wire_bytes_per_push" "$r_snapshot_wire_bytes" "$r_rss_bytes_per_subscriber"
            deflate_results+=("$mode $r_server_cpu_us_per_push $r_wire_bytes_per_push $r_snapshot_wire_bytes $r_rss_bytes_per_subscriber")
        done
    done
    dmedian() { printf '%s\n' "${deflate_results[@]}" | awk -v m="$1" -v c="$2" '$1 == m && $c != "n/a" { print $c }' | median_of; }
    echo
    echo "Medians of $RUNS runs:"
    printf '%-8s %12s %10s %12s %12s\n' mode "CPU µs/push" "B/push" "B/snapshot" "RSS/sub KiB"
    for mode in plain deflate; do
        printf '%-8s %12s %10s %12s %12s\n' $mode "$(dmedian $mode 2)" "$(dmedian $mode 3)" "$(dmedian $mode 4)" \
            "$(awk -v b="$(dmedian $mode 5)" 'BEGIN { if (b == "n/a") print b; else printf "%.2f", b / 1024 }')"
    done
    ratio() { awk -v a="$(dmedian deflate "$1")" -v b="$(dmedian plain "$1")" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.3f", a / b }'; }
    echo "deflate/plain: CPU per push $(ratio 2) (target <= 1.1), bytes per push $(ratio 3) and per snapshot $(ratio 4) (target <= 0.5)"
fi
[ "$failures" -eq 0 ] || { echo "bench-fanout: $failures runs failed; the full output was in $tmp/bench.log:" >&2; exit 1; }
