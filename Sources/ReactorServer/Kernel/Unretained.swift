extension Unmanaged {
    /// `body` with the instance, neither retained nor released around the call: the server's one
    /// use of the standard library's underscored `_withUnsafeGuaranteedRef`.
    ///
    /// A call through a class reference the optimiser cannot prove alive costs a retain and a
    /// release, two atomic operations; on the paths that run for every read, every request and
    /// every JSON Pointer lookup, that was a measurable share of their instructions. The caller
    /// guarantees the instance outlives the call, and says why where it calls this.
    @inline(__always)
    func withBorrowed<Result>(_ body: (Instance) -> Result) -> Result {
        _withUnsafeGuaranteedRef(body)
    }
}
