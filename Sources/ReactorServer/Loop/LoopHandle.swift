import CUV

/// A libuv handle that belongs to one Swift object: the one place where such a handle's memory is
/// allocated and freed, and where its `data` pointer is set and read. `Handle` is one of libuv's
/// handle types (`uv_timer_t`, `uv_prepare_t`, `uv_tcp_t`, ...), which all begin with the fields of
/// `uv_handle_t`, `data` first.
///
/// The handle points back at its owner without retaining it: the owner holds the handle and closes
/// it before it goes (`close()`, in its `deinit` or earlier), and libuv calls a closed handle back
/// no more, so a callback always finds its owner alive. (`TCPConnection`'s own handle works the
/// other way round: it retains the connection until libuv has closed it; see there.)
struct LoopHandle<Handle> {
    let pointer: UnsafeMutablePointer<Handle>

    /// Allocates the handle, uninitialised: the owner's `uv_*_init` initialises it, then `attach`es.
    init() {
        pointer = .allocate(capacity: 1)
    }

    /// Allocates the handle and initialises it with `initialize` (a `uv_*_init`), freeing it again
    /// if that fails.
    init(_ operation: String, initialize: (UnsafeMutablePointer<Handle>) -> Int32) throws(UVError) {
        pointer = .allocate(capacity: 1)
        do {
            try UVError.check(initialize(pointer), operation)
        } catch {
            pointer.deallocate()
            throw error
        }
    }

    var base: UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: uv_handle_t.self)
    }

    /// Points the initialised handle back at `owner`, unretained.
    func attach(to owner: AnyObject) {
        base.pointee.data = Unmanaged.passUnretained(owner).toOpaque()
    }

    /// The owner of the handle a libuv callback was called with.
    @inline(__always)
    static func owner<Owner: AnyObject>(of handle: UnsafeMutablePointer<Handle>?, as _: Owner.Type = Owner.self) -> Owner {
        let data = UnsafeMutableRawPointer(handle!).assumingMemoryBound(to: uv_handle_t.self).pointee.data
        return Unmanaged<Owner>.fromOpaque(data!).takeUnretainedValue()
    }

    /// Stops the handle keeping the loop alive.
    func unref() {
        uv_unref(base)
    }

    /// Closes the handle, and frees it once libuv is done with it. Nothing to do for a handle that
    /// is closing already: a loop that stops closes whatever is left itself (`EventLoop.run`).
    func close() {
        guard uv_is_closing(base) == 0 else { return }
        uv_close(base) { $0?.deallocate() }
    }

    /// Frees the handle without closing it: one whose `uv_*_init` failed, which libuv never saw, or
    /// one a stopped loop closed without freeing (`EventLoop.run`).
    func deallocate() {
        pointer.deallocate()
    }
}
