import CUV

/// Calls a handler on the loop thread when the process receives one of the given signals
/// (libuv turns the signal into a loop event, so the handler may do anything a loop callback may).
/// It watches for as long as the loop runs: `EventLoop.run()` closes its handles when it returns.
public final class SignalWatcher {
    private let handler: (Int32) -> Void

    /// Must be called on `loop`'s thread.
    public init(loop: EventLoop, signals: [Int32], handler: @escaping (Int32) -> Void) throws(UVError) {
        precondition(loop.isCurrent)
        self.handler = handler
        for signal in signals {
            let handle = try LoopHandle<uv_signal_t>("uv_signal_init") { uv_signal_init(loop.loop, $0) }
            handle.attach(to: self)
            try UVError.check(uv_signal_start(handle.pointer, { handle, signum in
                LoopHandle.owner(of: handle, as: SignalWatcher.self).handler(signum)
            }, signal), "uv_signal_start")
        }
    }
}
