import ByteWords

/// Where each field of a request head lies, found in a head llhttp has already accepted.
///
/// llhttp checks the head's syntax and works out its framing by itself; having it also report each
/// name and value through callbacks would cost four calls from C into Swift per field, more than the
/// rest of the head's handling together. So the parser stops llhttp at the end of the head, and the
/// fields are read here from its bytes, where what is left to follow is simple: lines that end in
/// CRLF, a name up to the first colon, a value after any spaces and tabs, and a line that starts
/// with a space or tab continuing the value above it (obsolete line folding).
///
/// The fields come out as llhttp's own callbacks report them (a test holds the two together on
/// generated heads), with one difference: this build of llhttp takes a CR followed by any byte where
/// it expects CRLF in two places (after an empty value, and in the blank line that ends the head),
/// which would let one header hide inside another; such a head is refused here.
enum HTTPHeadFields {
    /// Why a head is refused.
    enum Refusal: Error, Equatable {
        case tooManyFields
        /// A space in a name, which llhttp 8.1 lets through ("Transfer-Encoding x: ..."): a proxy in
        /// front of us may read such a name differently, which is how requests get smuggled.
        case spaceInName
        case bareCarriageReturn
        /// A line without a colon: llhttp would not have taken it, so this is never expected.
        case notAField
        /// A line starting with its colon: a field needs a name.
        case emptyName
    }

    /// What a head's fields say that the request keeps at hand.
    struct Facts {
        var sawExpectContinue = false
        var hostCount = 0
        var contentTypeField = -1
        /// A Host whose value is not a host (`HTTPHostSyntax`).
        var invalidHost = false
        /// Transfer codings before a final `chunked` (`gzip, chunked`): llhttp reads the body as
        /// chunked and ignores the rest, which must be refused rather than read past (RFC 9112
        /// §6.1: 501). A final coding other than chunked, or `chunked` twice, llhttp refuses itself (400).
        var unsupportedTransferCoding: Bool { transferEncodings > 1 && lastCodingIsChunked }
        var hasTransferEncoding: Bool { transferEncodings > 0 }
        private var transferEncodings = 0
        private var lastCodingIsChunked = false
        /// A field that a request carries once given twice (`Content-Type`, `Authorization`,
        /// `Idempotency-Key`): which value the client meant cannot be known, and a proxy in front
        /// may have read the other.
        private(set) var repeatedField: StaticString?
        private var authorizationSeen = false
        private var idempotencyKeySeen = false

        /// Notes what field number `index`, named `name`, says; `value` is read only for `Host`,
        /// `Expect` and `Transfer-Encoding`.
        @inline(__always)
        mutating func note(_ index: Int, name: UnsafeBufferPointer<UInt8>, value: () -> UnsafeBufferPointer<UInt8>) {
            switch HTTPHeaders.fact(ofFieldNamed: name) {
            case .host?:
                hostCount += 1
                if !HTTPHostSyntax.isValid(value()) { invalidHost = true }
            case .contentType?:
                if contentTypeField < 0 { contentTypeField = index } else { repeatedField = "Content-Type" }
            default:
                if name.count == 13 && HTTPASCII.isFieldName(name, "authorization") {
                    if authorizationSeen { repeatedField = "Authorization" }
                    authorizationSeen = true
                } else if name.count == 15 && HTTPASCII.isFieldName(name, "idempotency-key") {
                    if idempotencyKeySeen { repeatedField = "Idempotency-Key" }
                    idempotencyKeySeen = true
                } else if name.count == 6 && HTTPASCII.isFieldName(name, "expect")
                    && HTTPASCII.caseInsensitiveEqual(value(), lowercase: "100-continue") {
                    sawExpectContinue = true
                } else if name.count == 17 && HTTPASCII.isFieldName(name, "transfer-encoding") {
                    noteTransferCodings(value())
                }
            }
        }

        /// Notes how many codings a Transfer-Encoding value lists (comma-separated, across fields) and
        /// whether the last of them is `chunked`.
        private mutating func noteTransferCodings(_ value: UnsafeBufferPointer<UInt8>) {
            var index = 0
            while index < value.count {
                while index < value.count, value[index] == HTTPHeadFields.space || value[index] == HTTPHeadFields.tab || value[index] == UInt8(ascii: ",") { index += 1 }
                guard index < value.count else { break }
                let start = index
                while index < value.count, value[index] != UInt8(ascii: ",") { index += 1 }
                var end = index
                while end > start, value[end - 1] == HTTPHeadFields.space || value[end - 1] == HTTPHeadFields.tab { end -= 1 }
                transferEncodings += 1
                lastCodingIsChunked = HTTPASCII.caseInsensitiveEqual(UnsafeBufferPointer(rebasing: value[start..<end]), lowercase: "chunked")
            }
        }
    }

    /// Appends the fields of `head` to `fields`, each value's trailing blanks left out, and notes
    /// their `facts`. `head` holds the request line from the target on (its first `targetEnd` bytes
    /// are the target), the field lines, and the blank line that ends them. A head with folded lines
    /// has them joined (their line breaks removed from `head`) and is read again, so that each value
    /// is one range.
    static func locate(in head: inout [UInt8], targetEnd: Int, into fields: inout [HTTPHeaders.Field], facts: inout Facts, maxFields: Int) throws(Refusal) {
        let count = head.count
        guard count > 0 else { throw .notAField }
        let folded = try head.withUnsafeBufferPointer { bytes throws(Refusal) in
            try scan(bytes.baseAddress!, count: count, from: targetEnd, into: &fields, facts: &facts, maxFields: maxFields)
        }
        guard folded else { return }
        fields.removeAll(keepingCapacity: true)
        facts = Facts()
        unfold(&head, after: targetEnd)
        let unfoldedCount = head.count
        let stillFolded = try head.withUnsafeBufferPointer { bytes throws(Refusal) in
            try scan(bytes.baseAddress!, count: unfoldedCount, from: targetEnd, into: &fields, facts: &facts, maxFields: maxFields)
        }
        // A continuation with no field above it (right after the request line): llhttp refuses it.
        if stillFolded { throw .notAField }
    }

    /// Notes each field line; true (with `fields` and `facts` incomplete) at the first folded line.
    /// Through a pointer, eight bytes at a time: this reads every byte of every head.
    private static func scan(_ bytes: UnsafePointer<UInt8>, count: Int, from targetEnd: Int, into fields: inout [HTTPHeaders.Field],
                             facts: inout Facts, maxFields: Int) throws(Refusal) -> Bool {
        // The rest of the request line (llhttp takes a bare LF there).
        guard var index = first(lineFeed, in: bytes, from: targetEnd, count: count) else { return false }
        index += 1
        while index < count {
            let lineStart = index
            switch bytes[index] {
            case lineFeed:
                return false  // the blank line that ends the head
            case carriageReturn:
                guard index + 1 < count, bytes[index + 1] == lineFeed else { throw .bareCarriageReturn }
                return false
            case space, tab:
                return true
            default:
                break
            }
            // llhttp ends the name at the first colon, and checks it against the token set but
            // for spaces.
            let nameEnd = try colonEndingName(in: bytes, from: lineStart, count: count)
            guard nameEnd > lineStart else { throw .emptyName }
            index = nameEnd + 1
            while index < count, bytes[index] == space || bytes[index] == tab { index += 1 }
            let valueStart = index
            // llhttp ends a header line only at CRLF; a CR alone is the quirk described above.
            guard let lineEnd = first(carriageReturn, in: bytes, from: index, count: count),
                  lineEnd + 1 < count, bytes[lineEnd + 1] == lineFeed else { throw .bareCarriageReturn }
            // Trailing blanks are not part of the value (RFC 9110 §5.5); llhttp keeps them.
            var end = lineEnd
            while end > valueStart, bytes[end - 1] == space || bytes[end - 1] == tab { end -= 1 }
            guard fields.count < maxFields else { throw .tooManyFields }
            facts.note(fields.count, name: UnsafeBufferPointer(start: bytes + lineStart, count: nameEnd &- lineStart)) {
                UnsafeBufferPointer(start: bytes + valueStart, count: end &- valueStart)
            }
            fields.append(HTTPHeaders.Field(start: UInt32(lineStart), nameEnd: UInt32(nameEnd), valueStart: UInt32(valueStart), end: UInt32(end)))
            index = lineEnd + 2
        }
        return false
    }

    /// The offset of the colon that ends the name starting at `start`; throws for a space before it.
    @inline(__always)
    private static func colonEndingName(in bytes: UnsafePointer<UInt8>, from start: Int, count: Int) throws(Refusal) -> Int {
        let index = ByteScan.firstIndex(
            in: bytes, from: start, to: count,
            wordStops: { $0.lanes(equalTo: colon) | $0.lanes(equalTo: space) },
            byteStops: { $0 == colon || $0 == space })
        guard index < count else { throw .notAField }
        guard bytes[index] == colon else { throw .spaceInName }
        return index
    }

    /// The offset of the first `byte` at or after `start`, if any.
    @inline(__always)
    private static func first(_ byte: UInt8, in bytes: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int? {
        let index = ByteScan.firstIndex(
            in: bytes, from: start, to: count, wordStops: { $0.lanes(equalTo: byte) }, byteStops: { $0 == byte })
        return index < count ? index : nil
    }

    /// Removes the line break before each continuation line, which joins it to the value above as
    /// llhttp does: blanks and all, except that a value with nothing before the break starts after
    /// them (the blanks after a colon are skipped however many lines they take).
    private static func unfold(_ head: inout [UInt8], after targetEnd: Int) {
        var firstLine = targetEnd
        while firstLine < head.count, head[firstLine] != lineFeed { firstLine += 1 }
        var joined: [UInt8] = []
        joined.reserveCapacity(head.count)
        joined.append(contentsOf: head[..<min(firstLine + 1, head.count)])
        var index = firstLine + 1
        while index < head.count {
            if head[index] == carriageReturn, index + 2 < head.count, head[index + 1] == lineFeed,
               head[index + 2] == space || head[index + 2] == tab {
                index += 2
                continue
            }
            joined.append(head[index])
            index += 1
        }
        head = joined
    }

    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let colon = UInt8(ascii: ":")
}
