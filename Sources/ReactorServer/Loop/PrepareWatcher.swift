import CUV

/// Calls back at the end of every loop iteration, just before the loop waits for I/O: the moment
/// everything the iteration did is known (the events it applied, say) and can be handled together.
/// Does not keep the loop alive by itself.
final class PrepareWatcher {
    private let handle = LoopHandle<uv_prepare_t>()
    private let callback: () -> Void

    init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        uv_prepare_init(loop.loop, handle.pointer)
        handle.attach(to: self)
        uv_prepare_start(handle.pointer) { handle in
            LoopHandle.owner(of: handle, as: PrepareWatcher.self).callback()
        }
        handle.unref()
    }

    deinit {
        handle.close()
    }
}
