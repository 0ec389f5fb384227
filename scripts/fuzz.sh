#!/usr/bin/env bash
# Runs the libFuzzer targets (the HTTP request assembly, the WebSocket frame decoder, the cluster
# stream's record groups, the JSON parser, the journal's records) for FUZZ_SECONDS each (default
# 30), with AddressSanitizer.
# A crash leaves its input in .build-fuzz/crashes; replay it with a plain build: swift run
# fuzz-http-request <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
SECONDS_EACH=${FUZZ_SECONDS:-30}
targets=(fuzz-http-request fuzz-websocket-frames fuzz-stream-entries fuzz-json fuzz-journal)
# libFuzzer without its main: SwiftPM gives every executable an entry point of its own, which hands
# over to LLVMFuzzerRunDriver (Tests/Fuzz/Support).
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")
runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a | head -1)
for target in "${targets[@]}"; do
    swift build -c release --scratch-path .build-fuzz --product "$target" \
        -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xswiftc -DFUZZING \
        -Xlinker "$runtime" -Xlinker -lstdc++
done
mkdir -p .build-fuzz/crashes
status=0
for target in "${targets[@]}"; do
    corpus=.build-fuzz/corpus/$target
    mkdir -p "$corpus"
    echo "fuzz: $target for ${SECONDS_EACH}s"
    if ! .build-fuzz/release/"$target" -max_total_time="$SECONDS_EACH" -max_len=4096 \
        -artifact_prefix=.build-fuzz/crashes/"$target"- "$corpus" 2> .build-fuzz/"$target".log; then
        echo "fuzz: $target found a failure:"; tail -40 .build-fuzz/"$target".log
        status=1
    else
        grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" .build-fuzz/"$target".log | tail -1
    fi
done
exit $status
