import CUV

/// Calls back after a delay, once or repeatedly, on the loop thread. Does not keep the loop alive
/// by itself; stopped when released.
final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private let callback: () -> Void

    init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        handle = .allocate(capacity: 1)
        uv_timer_init(loop.loop, handle)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    /// Calls back after `milliseconds`, and then every `repeatMilliseconds` if that is not 0.
    /// Starting a started timer restarts it.
    func start(after milliseconds: UInt64, repeat repeatMilliseconds: UInt64 = 0) {
        uv_timer_start(handle, { handle in
            Unmanaged<LoopTimer>.fromOpaque(handle!.pointee.data).takeUnretainedValue().callback()
        }, milliseconds, repeatMilliseconds)
    }

    func stop() {
        uv_timer_stop(handle)
    }

    deinit {
        // A loop that has stopped closes its handles itself (EventLoop.run); otherwise close it here.
        let handle = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        if uv_is_closing(handle) == 0 {
            uv_close(handle) { $0?.deallocate() }
        }
    }
}
