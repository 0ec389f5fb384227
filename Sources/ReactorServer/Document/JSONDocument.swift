import Reactor
import Logging

/// reactord's default hosted state: one JSON document, changed by `DocumentEvent`s.
///
/// Events are applied in place: this is the server's hot path, so an event touches only the
/// containers along its path and copies none of them while the document is their only owner.
public struct JSONDocument: HostedState, Equatable {
    /// The whole document; `{}` for a new one. Setting or editing it forgets `lastChanges`.
    public var root: JSON {
        _read { yield contents.root }
        _modify {
            makeContentsUnique()
            contents.lastChanges = nil
            yield &contents.root
        }
    }

    /// The operations the last applied event made (see `DocumentChanges`); nil for a document
    /// changed any other way, or not changed yet. A rejected event leaves them, like the document,
    /// as they were. Not part of the document: equal documents may have got where they are by
    /// different events.
    public var lastChanges: [JSONPatchOperation]? { contents.lastChanges }

    /// The root and the last changes, behind one reference (copied on write): the core copies its
    /// state for every event it publishes, and a copy of this costs one retain and release, where
    /// the root's containers and the changes would cost four.
    private var contents: Contents

    /// @unchecked Sendable: changed only through a document that holds the one reference to it
    /// (copy on write), so no two owners ever see it change.
    private final class Contents: @unchecked Sendable {
        // @exclusivity(unchecked): reached only through the document's accessors, whose own
        // (static) exclusivity rules cover it; a dynamic check would run on every event.
        @exclusivity(unchecked) var root: JSON
        @exclusivity(unchecked) var lastChanges: [JSONPatchOperation]?

        init(root: JSON, lastChanges: [JSONPatchOperation]?) {
            self.root = root
            self.lastChanges = lastChanges
        }
    }

    public init(root: JSON = [:]) {
        contents = Contents(root: root, lastChanges: nil)
    }

    public init(json: JSON) {
        self.init(root: json)
    }

    private mutating func makeContentsUnique() {
        if !isKnownUniquelyReferenced(&contents) { copyContents() }
    }

    /// Out of line: where the replaced contents' release is in view, the compiler copies the event
    /// being applied (a retain and a release of its path) to keep it safe across it.
    @inline(never)
    private mutating func copyContents() {
        contents = Contents(root: contents.root, lastChanges: contents.lastChanges)
    }

    /// The document, for the edits of an event: unlike `root`, editing it keeps `lastChanges` (the
    /// event sets them once it is applied, and a rejected one leaves them as they were).
    var content: JSON {
        _read { yield contents.root }
        _modify {
            makeContentsUnique()
            yield &contents.root
        }
    }

    public static func == (lhs: JSONDocument, rhs: JSONDocument) -> Bool {
        lhs.contents === rhs.contents || lhs.root == rhs.root
    }

    /// The document itself: the server serializes it as is, sharing its contents.
    public func jsonValue() -> JSON {
        root
    }

    /// Applies the event if it can and ignores it otherwise, as `State.react(to:)` may not throw.
    public mutating func react(to event: Event) {
        try? apply(event)
    }

    /// Applies a `DocumentEvent`, or throws `EventRejection` with the document unchanged. Any other
    /// event is rejected: a typo'd Swift event type should not pass silently.
    public mutating func apply(_ event: Event) throws {
        let applied: Void? = try withEvent(event, as: DocumentEvent.self) { (event) throws(EventRejection) in try apply(event) }
        if applied == nil {
            throw EventRejection("JSONDocument does not handle events of type \(type(of: event))")
        }
    }

    /// A document event's `eventType`, read in place; the registry names anything else.
    public static func eventType(of event: any Event) -> String? {
        withEvent(event, as: DocumentEvent.self) { $0.eventType } ?? eventRegistry.typeName(of: event)
    }

    /// Applies `event`, or throws with the document exactly as it was (`.conflict` for a JSON Patch
    /// whose `test` failed, `.invalid` otherwise).
    public mutating func apply(_ event: DocumentEvent) throws(EventRejection) {
        try event.checkDepth()
        let changes = try applyRecordingChanges(event)
        contents.lastChanges = changes
    }
}

extension EventRejection {
    /// A failed patch, naming the operation: "patch operation 1 (test): test failed at /a: ...".
    /// A failed `test` is a precondition that did not hold, hence a conflict (409), not a bad request.
    init(_ error: JSONPatchError, in operations: [JSONPatchOperation]) {
        let kind: Kind = switch error.kind {
        case .testFailed: .conflict
        case .tooDeep: .tooDeep
        case .copiesTooMuch: .tooMuchGrowth
        default: .invalid
        }
        if let index = error.index, operations.indices.contains(index) {
            self.init("patch operation \(index) (\(operations[index].name)): \(error.reason)", kind: kind)
        } else {
            self.init("patch: \(error.reason)", kind: kind)
        }
    }
}

extension StateServer where StateType == JSONDocument {
    /// reactord's server. Made here rather than in the daemon so that the compiler specialises the
    /// whole request and event path for `JSONDocument` in this module: generic code used from another
    /// module runs unspecialised and spends its time looking up type metadata.
    public static func document(
        loop: EventLoop,
        state: JSONDocument,
        version: UInt64 = 0,
        configuration: ServerConfiguration,
        log: (any EventLog)? = nil,
        storage: StorageConfiguration = StorageConfiguration(),
        files: StaticFiles = StaticFiles(),
        tls: TLSContext? = nil,
        logger: Logger
    ) -> StateServer<JSONDocument> {
        StateServer(loop: loop, state: state, version: version, configuration: configuration, log: log, storage: storage, files: files, tls: tls, logger: logger)
    }

    /// As `DataDirectoryOperations.open`, specialised here for the same reason.
    public static func openStorage(_ directory: DataDirectory, initialState: JSONDocument, loop: EventLoop, options: FileEventLog.Options, logger: Logger) throws(EventLogError) -> (log: FileEventLog, state: JSONDocument, version: UInt64) {
        try DataDirectoryOperations.open(directory, initialState: initialState, loop: loop, options: options, logger: logger)
    }
}
