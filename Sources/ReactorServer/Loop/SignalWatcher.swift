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
            let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            try UVError.check(uv_signal_init(loop.loop, handle), "uv_signal_init")
            handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            try UVError.check(uv_signal_start(handle, { handle, signum in
                Unmanaged<SignalWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue().handler(signum)
            }, signal), "uv_signal_start")
        }
    }
}
