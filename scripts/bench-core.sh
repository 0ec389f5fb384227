#!/usr/bin/env bash
# Events per second through Core.fire(event:) against a bare react(to:) loop; see docs/performance.md.
# EVENTS (default 1,000,000) and RUNS (default 5) tune it; CASES (part of a case's name) runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product reactor-core-bench
.build/release/reactor-core-bench
