import CUV

/// Calls back at the end of every loop iteration, just before the loop waits for I/O: the moment
/// everything the iteration did is known (the events it applied, say) and can be handled together.
/// Does not keep the loop alive by itself.
final class PrepareWatcher {
    private let handle: UnsafeMutablePointer<uv_prepare_t>
    private let callback: () -> Void

    init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        handle = .allocate(capacity: 1)
        uv_prepare_init(loop.loop, handle)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_start(handle) { handle in
            Unmanaged<PrepareWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue().callback()
        }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    deinit {
        // A loop that has stopped closes its handles itself (EventLoop.run); otherwise close it here.
        let handle = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        if uv_is_closing(handle) == 0 {
            uv_close(handle) { $0?.deallocate() }
        }
    }
}
