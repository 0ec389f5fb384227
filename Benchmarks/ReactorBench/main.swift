// reactor-bench: the fan-out benchmark. N WebSocket subscribers on /subscribe, E events fired over
// HTTP, and how long each event takes to reach the last subscriber. See docs/performance.md.
// Everything that libuv calls back lives in the other files: closures written here would be
// inferred @MainActor.
ReactorBench.main()
