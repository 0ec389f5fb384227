#!/usr/bin/env bash
# Requests per second of reactord against nginx on the same request, POST /events (an increment
# event, or with WORKLOAD=set the realistic one); see docs/performance.md. Runs alternate (reactord, nginx, reactord, ...) so a
# noisy moment on the machine hits both alike, and the table gives the ratio of the medians.
#
# Tunables (environment):
#   DURATION=10s      length of each measured wrk run
#   CONNECTIONS=50    wrk connections (wrk uses THREADS threads; -t1 leaves one core to the server)
#   THREADS=1
#   RUNS=3            measured runs per server
#   WARMUP=2s         one unmeasured run per server first (0 to skip)
#   REACTORD_PORT=18080 NGINX_PORT=18081   ports on 127.0.0.1
#   PIN=1             pin the servers to CPU 0 and wrk to CPU 1 (0: let the scheduler place them)
#   BUILD=1           build reactord release first (0: use .build/release/reactord as it is)
#   TLS=0             1: both servers speak TLS (one certificate made here, P-256; OpenSSL's default
#                     ciphers on both: TLS 1.3, AES-256-GCM), wrk over https
#   CONNECTION_CLOSE=0  1: every request on a new connection (wrk -H 'Connection: close'): with TLS=1,
#                     what a handshake costs each server
#   WORKLOAD=increment  the event POSTed: increment (Benchmarks/http/post-events.lua, 46 bytes), or
#                     set (Benchmarks/http/post-set.lua: an object of ~300 bytes set at one of 64 keys
#                     of a wide document, taken in turn)
# Defaults take about 90 seconds with the build up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-1}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2s}
REACTORD_PORT=${REACTORD_PORT:-18080}
NGINX_PORT=${NGINX_PORT:-18081}
PIN=${PIN:-1}
BUILD=${BUILD:-1}
TLS=${TLS:-0}
CONNECTION_CLOSE=${CONNECTION_CLOSE:-0}
WORKLOAD=${WORKLOAD:-increment}
case $WORKLOAD in
    increment) script=Benchmarks/http/post-events.lua ;;
    set) script=Benchmarks/http/post-set.lua ;;
    *) echo "bench-http: WORKLOAD is increment or set, not $WORKLOAD" >&2; exit 2 ;;
esac
scheme=http; [ "$TLS" = 1 ] && scheme=https
wrk_headers=(); [ "$CONNECTION_CLOSE" = 1 ] && wrk_headers=(-H 'Connection: close')

scripts/setup.sh

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for pkg in wrk nginx-light curl; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench-http: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ "$BUILD" = 1 ]; then swift build -c release --product reactord; fi
REACTORD=$root/.build/release/reactord
[ -x "$REACTORD" ] || { echo "bench-http: $REACTORD is missing (BUILD=0 needs a release build)" >&2; exit 1; }

. scripts/bench-lib.sh
pin_cpus

tmp=$(mktemp -d /tmp/bench-http.XXXXXX)
reactord_pid="" nginx_pid=""
stop() {
    local pid
    for pid in $reactord_pid $nginx_pid; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $reactord_pid $nginx_pid; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    reactord_pid="" nginx_pid=""
}
cleanup() { stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! curl -s -o /dev/null -m 1 "http://127.0.0.1:$1/" 2>/dev/null && ! curl -sk -o /dev/null -m 1 "https://127.0.0.1:$1/" 2>/dev/null; }
wait_for() { # name pid url
    for _ in $(seq 100); do
        kill -0 "$2" 2>/dev/null || { echo "bench-http: $1 exited at start" >&2; cat "$tmp/$1.log" "$tmp"/error.log 2>/dev/null >&2; exit 1; }
        curl -sk -o /dev/null -m 1 "$3" && return 0
        sleep 0.1
    done
    echo "bench-http: $1 did not answer on $3 within 10 s" >&2; exit 1
}

for port in "$REACTORD_PORT" "$NGINX_PORT"; do
    port_free "$port" || { echo "bench-http: something already answers on 127.0.0.1:$port" >&2; exit 1; }
done

tls_flags=()
if [ "$TLS" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
        -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    tls_flags=(--tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem")
fi

# reactord: release, request logging off (warnings and errors only), state starts as {}.
"${cpu_server[@]}" "$REACTORD" --host 127.0.0.1 --port "$REACTORD_PORT" --log-level warning "${tls_flags[@]}" >"$tmp/reactord.log" 2>&1 &
reactord_pid=$!
wait_for reactord "$reactord_pid" "$scheme://127.0.0.1:$REACTORD_PORT/state"

# nginx: one worker, its config, pid, logs and temp files in $tmp.
mkdir -p "$tmp/nginx"
listen="127.0.0.1:$NGINX_PORT;"
if [ "$TLS" = 1 ]; then
    # The same certificate; TLS 1.2 and 1.3 as reactord, OpenSSL's default ciphers, no session cache
    # (reactord keeps none either).
    listen="127.0.0.1:$NGINX_PORT ssl; ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem; ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache off; ssl_session_tickets off;"
fi
sed -e "s|@DIR@|$tmp/nginx|g" -e "s|listen 127.0.0.1:@PORT@;|listen $listen|" Benchmarks/http/nginx.conf.template >"$tmp/nginx/nginx.conf"
"${cpu_server[@]}" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" >"$tmp/nginx.log" 2>&1 &
nginx_pid=$!
wait_for nginx "$nginx_pid" "$scheme://127.0.0.1:$NGINX_PORT/"

body='{"type":"increment","path":"/counter","by":1}'
for server in reactord nginx; do
    port=$REACTORD_PORT; [ $server = nginx ] && port=$NGINX_PORT
    answer=$(curl -sk -m 5 -X POST -H 'Content-Type: application/json' -d "$body" -w ' %{http_code}' "$scheme://127.0.0.1:$port/events")
    echo "bench-http: $server answers POST /events with $answer"
    [ "${answer##* }" = 200 ] || { echo "bench-http: $server does not answer 200" >&2; exit 1; }
done
reactord_sent=1 # the check above fired one event

# Runs wrk once; prints "req/s requests non2xx errors p50 p99" (latencies as wrk prints them).
run_wrk() { # port duration
    local out secs
    secs=$(seconds "$2")
    out=$(timeout $((secs + 30)) "${cpu_client[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2" --latency "${wrk_headers[@]}" \
        -s "$script" "$scheme://127.0.0.1:$1/events") || true
    echo "$out" >>"$tmp/wrk.log"
    awk '
        /Requests\/sec:/ { rps = $2 }
        / requests in / { requests = $1 }
        /Non-2xx or 3xx responses:/ { non2xx = $NF }
        /Socket errors:/ { gsub(",", ""); errors = $4 + $6 + $8 + $10 }
        $1 == "50%" { p50 = $2 }
        $1 == "99%" { p99 = $2 }
        END { printf "%s %s %d %d %s %s\n", rps, requests, non2xx, errors, p50, p99 }
    ' <<<"$out"
}

echo "bench-http: wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency ${wrk_headers[*]} -s $script $scheme://, $RUNS runs each, alternating$([ ${#cpu_client[@]} -gt 0 ] && echo ", servers on CPU 0, wrk on CPU 1")"
if [ "$WARMUP" != 0 ] && [ "$WARMUP" != 0s ]; then
    read -r _ requests non2xx _ <<<"$(run_wrk "$REACTORD_PORT" "$WARMUP")"
    reactord_sent=$((reactord_sent + requests - non2xx))
    run_wrk "$NGINX_PORT" "$WARMUP" >/dev/null
fi

results=()
printf '\n%-4s %-9s %12s %10s %8s %7s %9s %9s\n' run server "requests/s" requests non-2xx errors "p50" "p99"
for run in $(seq "$RUNS"); do
    for server in reactord nginx; do
        port=$REACTORD_PORT; [ $server = nginx ] && port=$NGINX_PORT
        read -r rps requests non2xx errors p50 p99 <<<"$(run_wrk "$port" "$DURATION")"
        [ -n "$rps" ] || { echo "bench-http: wrk printed no Requests/sec; its output is in $tmp/wrk.log" >&2; cat "$tmp/wrk.log" >&2; exit 1; }
        printf '%-4s %-9s %12s %10s %8s %7s %9s %9s\n' "$run" "$server" "$rps" "$requests" "$non2xx" "$errors" "$p50" "$p99"
        results+=("$server $rps")
        [ $server = reactord ] && reactord_sent=$((reactord_sent + requests - non2xx))
    done
done

median() { printf '%s\n' "${results[@]}" | awk -v s="$1" '$1 == s { print $2 }' | median_of; }
reactord_median=$(median reactord)
nginx_median=$(median nginx)
ratio=$(awk -v a="$reactord_median" -v b="$nginx_median" 'BEGIN { printf "%.3f", a / b }')
# Each run's pair (reactord, then nginx right after) shares the machine's phase more than the
# medians do: on a machine whose speed drifts, the median of the pairs' ratios is the steadier figure.
pairs=$(printf '%s\n' "${results[@]}" | awk '$1 == "reactord" { r = $2 } $1 == "nginx" { printf "%.3f\n", r / $2 }')
pair_median=$(median_of <<<"$pairs")
echo
printf '%-16s %12s\n' "median reactord" "$reactord_median" "median nginx" "$nginx_median"
printf '%-16s %12s   (target >= 0.9)\n' "reactord/nginx" "$ratio"
printf '%-16s %12s   (runs: %s)\n' "pairwise ratio" "$pair_median" "$(tr '\n' ' ' <<<"$pairs" | sed 's/ $//')"

# Did reactord apply what it answered 200 to? wrk counts the responses it read; requests still in
# flight when a run's time is up are applied but not counted, so the counter may be ahead by up to
# CONNECTIONS per run. The set workload changes no counter: its check is the version.
state=$(curl -sk -m 5 "$scheme://127.0.0.1:$REACTORD_PORT/state")
echo
if [ "$WORKLOAD" = increment ]; then
    counter=$(sed -n 's/.*"counter":\([0-9]*\).*/\1/p' <<<"$state")
    echo "reactord counter: ${counter:-?}; 200 responses wrk read (all reactord runs and the check): $reactord_sent; difference: $(( ${counter:-0} - reactord_sent ))"
else
    version=$(curl -sk -m 5 "$scheme://127.0.0.1:$REACTORD_PORT/readyz" | sed -n 's/.*"version":\([0-9]*\).*/\1/p')
    echo "reactord version: ${version:-?}; 200 responses wrk read (all reactord runs and the check): $reactord_sent; difference: $(( ${version:-0} - reactord_sent )); players in the state: $(grep -o '"player[0-9]*":' <<<"$state" | sort -u | wc -l)"
fi
if grep -q . "$tmp/reactord.log"; then echo "reactord logged:"; head -20 "$tmp/reactord.log"; fi
if [ -s "$tmp/nginx/error.log" ]; then echo "nginx error.log:"; head -20 "$tmp/nginx/error.log"; fi
