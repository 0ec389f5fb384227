/// Header (or trailer) fields in arrival order.
///
/// All names and values live in one byte buffer with a small index of offsets, so assembling a
/// request costs two allocations however many fields it has; Strings are only created when a
/// field is looked up. Names compare ASCII-case-insensitively; values have surrounding
/// whitespace removed.
public struct HTTPHeaders: Sendable {
    /// Offsets into `bytes`: the name is `start..<nameEnd`, the value `valueStart..<end`. (A parsed
    /// head keeps its bytes as they arrived, separators included, between the two.)
    struct Field: Hashable, Sendable {
        var start: UInt32
        var nameEnd: UInt32
        var valueStart: UInt32
        var end: UInt32
    }

    private(set) var bytes: [UInt8]
    private(set) var fields: [Field]
    /// Asked of every request, so noted while the head is checked rather than searched for: how many `Host`
    /// fields there are, and which field is the first `Content-Type` (-1: none).
    // 32-bit: a request is moved and copied whole several times on its way, and its two sets of
    // fields (headers, trailers) are most of its size.
    private var hostFields: Int32 = 0
    private var contentTypeField: Int32 = -1
    var hostCount: Int { Int(hostFields) }

    public init() {
        bytes = []
        fields = []
    }

    public init(_ pairs: [(name: String, value: String)]) {
        self.init()
        for (name, value) in pairs { append(name: name, value: value) }
    }

    init(bytes: [UInt8], fields: [Field]) {
        self.bytes = bytes
        self.fields = fields
        for index in fields.indices { note(index) }
    }

    /// Fields whose facts the caller noted as it assembled them (`HTTPRequestAssembly`).
    init(bytes: [UInt8], fields: [Field], hostCount: Int, contentTypeField: Int) {
        self.bytes = bytes
        self.fields = fields
        hostFields = Int32(hostCount)
        self.contentTypeField = Int32(contentTypeField)
    }

    /// What a field named `name` tells the facts above: .host, .contentType, or nil.
    @inline(__always)
    static func fact(ofFieldNamed name: UnsafeBufferPointer<UInt8>) -> Fact? {
        switch name.count {
        case 4 where HTTPASCII.isFieldName(name, "host"): return .host
        case 12 where HTTPASCII.isFieldName(name, "content-type"): return .contentType
        default: return nil
        }
    }

    enum Fact { case host, contentType }

    public mutating func append(name: String, value: String) {
        let start = UInt32(bytes.count)
        bytes.append(contentsOf: name.utf8)
        let nameEnd = UInt32(bytes.count)
        bytes.append(contentsOf: value.utf8)
        fields.append(Field(start: start, nameEnd: nameEnd, valueStart: nameEnd, end: UInt32(bytes.count)))
        note(fields.count - 1)
    }

    private mutating func note(_ index: Int) {
        let field = fields[index]
        let fact = bytes.withUnsafeBufferPointer { Self.fact(ofFieldNamed: UnsafeBufferPointer(rebasing: $0[Int(field.start)..<Int(field.nameEnd)])) }
        switch fact {
        case .host?: hostFields += 1
        case .contentType? where contentTypeField < 0: contentTypeField = Int32(index)
        default: break
        }
    }

    /// Moves the storage into `bytes` and `fields` (for reuse), emptied, when neither holds more than
    /// `maxBytes` or `maxFields`; leaves the headers empty either way.
    mutating func moveStorage(into bytes: inout [UInt8], _ fields: inout [Field], maxBytes: Int, maxFields: Int) {
        if self.bytes.capacity <= maxBytes {
            swap(&bytes, &self.bytes)
            bytes.removeAll(keepingCapacity: true)
        }
        if self.fields.capacity <= maxFields {
            swap(&fields, &self.fields)
            fields.removeAll(keepingCapacity: true)
        }
        hostFields = 0
        contentTypeField = -1
    }

    /// `body` of the storage's bytes, in place.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        bytes.withUnsafeBufferPointer(body)
    }

    /// `body` of the value of the first `Content-Type` field (nil without one), read in place: a
    /// slice would retain and release the headers' bytes, on every request that has a body.
    func withContentType<Result>(_ body: (UnsafeBufferPointer<UInt8>?) -> Result) -> Result {
        guard contentTypeField >= 0 else { return body(nil) }
        let field = fields[Int(contentTypeField)]
        return bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[Int(field.valueStart)..<Int(field.end)])) }
    }

    // MARK: Lookup

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        firstValueBytes(name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The first value of `name` without creating a String.
    public func firstValueBytes(_ name: String) -> ArraySlice<UInt8>? {
        guard let field = firstField(named: name) else { return nil }
        return bytes[Int(field.valueStart)..<Int(field.end)]
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        var name = name
        return name.withUTF8 { wanted in
            fields.compactMap { field in
                nameMatches(field, wanted)
                    ? String(decoding: bytes[Int(field.valueStart)..<Int(field.end)], as: UTF8.self) : nil
            }
        }
    }

    public func contains(_ name: String) -> Bool {
        firstField(named: name) != nil
    }

    /// How many fields are named `name`, without creating Strings.
    public func count(of name: String) -> Int {
        var name = name
        return name.withUTF8 { wanted in fields.reduce(0) { $0 + (nameMatches($1, wanted) ? 1 : 0) } }
    }

    /// Whether any value of `name`, read as a comma-separated list, holds `token`
    /// (case-insensitively), as for `Connection: keep-alive, Upgrade`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        var name = name
        var token = token
        return name.withUTF8 { wanted in
            token.withUTF8 { token in
                fields.contains { field in
                    guard nameMatches(field, wanted) else { return false }
                    return bytes[Int(field.valueStart)..<Int(field.end)]
                        .split(separator: UInt8(ascii: ","))
                        .contains { HTTPASCII.caseInsensitiveEqual(HTTPASCII.trimmingWhitespace($0), token) }
                }
            }
        }
    }

    private func firstField(named name: String) -> Field? {
        var name = name
        return name.withUTF8 { wanted in fields.first { nameMatches($0, wanted) } }
    }

    private func nameMatches(_ field: Field, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        Int(field.nameEnd - field.start) == wanted.count
            && HTTPASCII.caseInsensitiveEqual(bytes[Int(field.start)..<Int(field.nameEnd)], wanted)
    }
}

extension HTTPHeaders: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { fields.count }

    public subscript(position: Int) -> (name: String, value: String) {
        let field = fields[position]
        return (
            String(decoding: bytes[Int(field.start)..<Int(field.nameEnd)], as: UTF8.self),
            String(decoding: bytes[Int(field.valueStart)..<Int(field.end)], as: UTF8.self)
        )
    }
}

extension HTTPHeaders: Equatable {
    /// Same names (exact bytes) and values in the same order, however the storage is laid out.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        return zip(lhs.fields, rhs.fields).allSatisfy { l, r in
            lhs.bytes[Int(l.start)..<Int(l.nameEnd)].elementsEqual(rhs.bytes[Int(r.start)..<Int(r.nameEnd)])
                && lhs.bytes[Int(l.valueStart)..<Int(l.end)].elementsEqual(rhs.bytes[Int(r.valueStart)..<Int(r.end)])
        }
    }
}

extension HTTPHeaders: CustomStringConvertible {
    public var description: String {
        "[" + map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }
}
