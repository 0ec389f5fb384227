/// Checks the framing of a chunked body byte by byte (RFC 9112 §7.1): each chunk-size line, each
/// chunk's data and the trailer section end with CRLF exactly. llhttp 8.1 (Debian's), built
/// lenient, skips the two bytes after a chunk's data unread and takes a CR followed by any byte as
/// a line's end: a proxy in front that reads them strictly would find the body ending elsewhere,
/// which is how requests are smuggled past it. llhttp still parses the body; this only refuses.
///
/// Sans-I/O: `consume` the body's bytes as they are parsed, in order, however they are split.
struct ChunkedFraming {
    private enum Position {
        /// In a chunk-size line (its size, then any extensions), at `size` so far.
        case sizeLine(size: Int, inDigits: Bool)
        case data(remaining: Int)
        /// After a chunk's data: its CRLF.
        case dataEnd
        /// In the trailer section, at the start of a line when `lineLength` is 0.
        case trailers(lineLength: Int)
        case done
    }

    private var position = Position.sizeLine(size: 0, inDigits: true)
    /// The CR just read ends a line: the next byte must be LF.
    private var expectsLF = false

    /// Reads `bytes`; the reason the framing is wrong, if it is.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> String? {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if expectsLF {
                guard byte == 10 else { return "a CR not followed by LF ends a line of the chunked body" }
                expectsLF = false
                switch position {
                case .sizeLine(let size, _): position = size == 0 ? .trailers(lineLength: 0) : .data(remaining: size)
                case .dataEnd: position = .sizeLine(size: 0, inDigits: true)
                case .trailers(let length): position = length == 0 ? .done : .trailers(lineLength: 0)
                case .data, .done: break
                }
                index += 1
                continue
            }
            switch position {
            case .sizeLine(let size, let inDigits):
                if byte == 13 {
                    expectsLF = true
                } else if byte == 10 {
                    return "a chunk-size line ends with LF alone, not CRLF"
                } else if inDigits, let digit = HTTPASCII.hexDigitValue(byte).map(Int.init) {
                    // llhttp refuses sizes that overflow; past this bound the body is refused anyway.
                    position = .sizeLine(size: min(size &* 16 &+ digit, 1 << 40), inDigits: true)
                } else {
                    position = .sizeLine(size: size, inDigits: false)
                }
                index += 1
            case .data(let remaining):
                let taken = min(remaining, bytes.count - index)
                index += taken
                position = remaining == taken ? .dataEnd : .data(remaining: remaining - taken)
            case .dataEnd:
                guard byte == 13 else { return "a chunk's data is not followed by CRLF" }
                expectsLF = true
                index += 1
            case .trailers(let length):
                if byte == 13 {
                    expectsLF = true
                } else if byte == 10 {
                    return "a line of the chunked body's trailers ends with LF alone, not CRLF"
                } else {
                    position = .trailers(lineLength: length + 1)
                }
                index += 1
            case .done:
                return "bytes after the end of the chunked body"
            }
        }
        return nil
    }
}
