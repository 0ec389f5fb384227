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

/// A libuv request (`uv_write_t`, `uv_shutdown_t`, `uv_work_t`, ...) that keeps one Swift object
/// alive until libuv calls it back: the one place such a request is allocated and freed and its
/// `data` pointer set and read. `Request` is one of libuv's request types, which all begin with the
/// fields of `uv_req_t`, `data` first.
///
/// `make(holding:)` retains the object; exactly one of `finish` (in the request's callback) or
/// `abandon` (when libuv refused to start it, and will never call back) releases it and frees
/// the request.
enum LoopRequest<Request> {
    /// A new request holding `owner` (retained) for its callback.
    static func make(holding owner: AnyObject) -> UnsafeMutablePointer<Request> {
        let request = UnsafeMutablePointer<Request>.allocate(capacity: 1)
        base(of: request).pointee.data = Unmanaged.passRetained(owner).toOpaque()
        return request
    }

    /// The object `request` holds, still held: for a callback that comes before the last one
    /// (a threadpool job's work, before its completion).
    static func owner<Owner: AnyObject>(of request: UnsafeMutablePointer<Request>?, as _: Owner.Type = Owner.self) -> Owner {
        Unmanaged<Owner>.fromOpaque(base(of: request!).pointee.data).takeUnretainedValue()
    }

    /// In the request's last callback: the object it held, handed over, and the request freed.
    static func finish<Owner: AnyObject>(_ request: UnsafeMutablePointer<Request>?, as _: Owner.Type = Owner.self) -> Owner {
        let owner = Unmanaged<Owner>.fromOpaque(base(of: request!).pointee.data).takeRetainedValue()
        request!.deallocate()
        return owner
    }

    /// A request libuv would not start: the object it held is released and the request freed.
    static func abandon(_ request: UnsafeMutablePointer<Request>) {
        Unmanaged<AnyObject>.fromOpaque(base(of: request).pointee.data).release()
        request.deallocate()
    }

    private static func base(of request: UnsafeMutablePointer<Request>) -> UnsafeMutablePointer<uv_req_t> {
        UnsafeMutableRawPointer(request).assumingMemoryBound(to: uv_req_t.self)
    }
}
