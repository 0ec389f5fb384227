#!/usr/bin/env bash
# Autobahn|Testsuite's fuzzing client (cases 1-10: framing, pings, reserved bits, opcodes,
# fragmentation, UTF-8, closing, limits, performance, auto-fragmentation; 12-13: permessage-deflate
# with every offer the suite makes) against reactord's /echo.
#
# The suite is Python 2.7 only. It lives in a virtualenv under .build-autobahn/venv, installed once
# from Tests/autobahn/requirements.txt (pinned) and reused while that file is unchanged.
# Python 2.7 comes from $AUTOBAHN_PYTHON2, else pyenv's 2.7.18, else python2.7 on the PATH.
#
# Environment: REACTORD_BIN (skip the build and use this binary), AUTOBAHN_CONFIGURATION
# (debug, the default, or release), AUTOBAHN_CASES (e.g. "1.*,7.*", default 1.* to 10.*, 12.*, 13.*),
# AUTOBAHN_TLS=1 (reactord speaks TLS, with a certificate made here, and the suite connects to wss://),
# AUTOBAHN_TIMEOUT (seconds for the whole run, default 3600; 12-13 alone take some 20 minutes).
# Exits non-zero if any case's behavior or close behavior is not OK, NON-STRICT or INFORMATIONAL.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cache=$root/.build-autobahn
venv=$cache/venv
requirements=$root/Tests/autobahn/requirements.txt
spec_template=$root/Tests/autobahn/spec.json
reports=$cache/reports
configuration=${AUTOBAHN_CONFIGURATION:-debug}

# ---- Python 2.7 and the suite, installed once ------------------------------------------------
find_python2() {
    if [ -n "${AUTOBAHN_PYTHON2:-}" ]; then echo "$AUTOBAHN_PYTHON2"; return; fi
    if command -v pyenv >/dev/null 2>&1 && [ -x "$(pyenv root)/versions/2.7.18/bin/python" ]; then
        echo "$(pyenv root)/versions/2.7.18/bin/python"; return
    fi
    command -v python2.7 || true
}
python2=$(find_python2)
[ -n "$python2" ] && [ -x "$python2" ] || {
    echo "autobahn: Python 2.7 not found (set AUTOBAHN_PYTHON2, or: pyenv install 2.7.18)" >&2; exit 2; }

stamp=$(cat "$requirements" <(echo "$python2") | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/wstest" ] && [ "$(cat "$venv/.installed" 2>/dev/null)" = "$stamp" ]; then
    echo "autobahn: using the suite in $venv"
else
    echo "autobahn: installing Autobahn|Testsuite into $venv"
    rm -rf "$venv"
    mkdir -p "$cache"
    # virtualenv 20.21.1 is the last release that creates Python 2.7 environments; it goes in a
    # folder of its own rather than into either Python.
    if [ ! -f "$cache/virtualenv/virtualenv/__init__.py" ]; then
        python3 -m pip install -q --disable-pip-version-check --target "$cache/virtualenv" virtualenv==20.21.1 \
            || "$python2" -m pip install -q --disable-pip-version-check --target "$cache/virtualenv" virtualenv==20.21.1
    fi
    PYTHONPATH=$cache/virtualenv python3 -m virtualenv -q -p "$python2" "$venv" \
        || PYTHONPATH=$cache/virtualenv "$python2" -m virtualenv -q "$venv"
    PIP_NO_PYTHON_VERSION_WARNING=1 "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    "$venv/bin/wstest" --autobahnversion >/dev/null
    echo "$stamp" > "$venv/.installed"
fi

# ---- reactord ----------------------------------------------------------------------------------
if [ -n "${REACTORD_BIN:-}" ]; then
    bin=$REACTORD_BIN
else
    swift build -c "$configuration" --product reactord
    bin=$(swift build -c "$configuration" --show-bin-path)/reactord
fi

work=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Port 0: reactord picks a free port and logs it, so no other process can take it in between.
tls=() scheme=ws
if [ "${AUTOBAHN_TLS:-0}" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
        -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    tls=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem") scheme=wss
fi
"$bin" --port 0 --host 127.0.0.1 --websocket-echo --max-message-bytes 16777216 "${tls[@]}" \
    2>"$work/reactord.log" </dev/null &
pid=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's/.*address=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/reactord.log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "autobahn: reactord did not start:" >&2; cat "$work/reactord.log" >&2; exit 1
fi
echo "autobahn: reactord ($bin) on $scheme://127.0.0.1:$port"

# ---- the run -------------------------------------------------------------------------------------
rm -rf "$reports"
mkdir -p "$reports"
python3 - "$spec_template" "$work/spec.json" "$scheme://127.0.0.1:$port/echo" "$reports/servers" "${AUTOBAHN_CASES:-}" <<'PY'
import json, sys
template, target, url, outdir, cases = sys.argv[1:]
spec = json.load(open(template))
spec["outdir"] = outdir
spec["servers"] = [{"agent": "reactord", "url": url}]
if cases:
    spec["cases"] = [case.strip() for case in cases.split(",") if case.strip()]
json.dump(spec, open(target, "w"), indent=2)
PY
status=0
(cd "$work" && timeout "${AUTOBAHN_TIMEOUT:-3600}" "$venv/bin/wstest" -m fuzzingclient -s "$work/spec.json") \
    >"$work/wstest.log" 2>&1 || status=$?
if [ "$status" -ne 0 ] || [ ! -f "$reports/servers/index.json" ]; then
    echo "autobahn: wstest failed (exit $status):" >&2
    tail -40 "$work/wstest.log" >&2
    echo "autobahn: 0 passed, 1 failed"
    exit 1
fi
if ! kill -0 "$pid" 2>/dev/null; then
    echo "autobahn: reactord died during the run:" >&2; tail -40 "$work/reactord.log" >&2
fi

# ---- the verdict ---------------------------------------------------------------------------------
python3 - "$reports/servers" <<'PY'
import collections, json, os, sys

folder = sys.argv[1]
index = json.load(open(os.path.join(folder, "index.json")))
acceptable = {"OK", "NON-STRICT", "INFORMATIONAL"}

def case_key(case_id):
    return tuple(int(part) for part in case_id.split("."))

behaviors = collections.Counter()
closes = collections.Counter()
failed = []
for agent, cases in sorted(index.items()):
    for case_id in sorted(cases, key=case_key):
        result = cases[case_id]
        behaviors[result["behavior"]] += 1
        closes[result["behaviorClose"]] += 1
        if result["behavior"] not in acceptable or result["behaviorClose"] not in acceptable:
            failed.append((agent, case_id, result))

print("autobahn: behavior       " + ", ".join(f"{k} {v}" for k, v in sorted(behaviors.items())))
print("autobahn: behaviorClose  " + ", ".join(f"{k} {v}" for k, v in sorted(closes.items())))
for agent, case_id, result in failed:
    print(f"autobahn: FAILED {case_id}: behavior {result['behavior']}, close {result['behaviorClose']}, "
          f"remote close code {result.get('remoteCloseCode')}")
    try:
        detail = json.load(open(os.path.join(folder, result["reportfile"])))
    except (OSError, KeyError, ValueError):
        continue
    for field in ("description", "expectation", "result", "resultClose"):
        if detail.get(field):
            print(f"    {field}: {' '.join(str(detail[field]).split())}")
total = sum(behaviors.values())
print(f"autobahn: reports in {folder}")
print(f"autobahn: {total - len(failed)} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
PY
