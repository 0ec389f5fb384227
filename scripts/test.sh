#!/usr/bin/env bash
# Sets everything up and runs every test. With --tsan, runs the Reactor library's tests, the
# libuv executor's, the commit pipeline's (the journal on libuv's threadpool) and the event path's under
# ThreadSanitizer instead, in a build folder of their own so that the two
# builds do not undo each other.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = "--tsan" ]; then
    exec swift test --sanitize=thread --scratch-path .build-tsan --filter "ReactorTests|EventLoopExecutorTests|CommitPipelineTests|SharedLogPipelineTests|EventPathTests"
fi
swift build --build-tests
swift test
# End-to-end: real reactord processes on 127.0.0.1, driven by curl, http.client and raw sockets.
python3 -m pytest -q Tests/e2e
# Both again, optimised as reactord is run: the hot path leans on what the optimiser does with
# unretained references and lent values, which a debug build never exercises. (Testable imports
# need -enable-testing; a build folder of its own leaves .build/release the plain release build.)
release=(-c release -Xswiftc -enable-testing --scratch-path .build-release-tests)
swift build "${release[@]}" --build-tests
swift test "${release[@]}" --skip-build
REACTORD_BIN="$PWD/.build-release-tests/release/reactord" python3 -m pytest -q Tests/e2e
# The browser JavaScript client (Clients/js) against real reactord processes. Node 20 has its
# WebSocket behind a flag; without one (Debian 12's Node 18) the tests bring a minimal client.
node_flags=$(node --experimental-websocket -e '' >/dev/null 2>&1 && echo --experimental-websocket || true)
node $node_flags --test Clients/js/test/
python3 -m pytest -q Clients/python/tests
