/// Compact RFC 8259 output.
///
/// Object members come out in insertion order, so the same value always
/// serializes to the same bytes. Integers are exact; doubles use Swift's
/// shortest round-tripping form; NaN and infinity (which the parser never
/// produces, but code can construct) become `null` because JSON has no
/// spelling for them.
extension JSON {
    /// Appends the compact JSON text of the value to `buffer`, so a response
    /// can be assembled in one allocation.
    public func write(into buffer: inout [UInt8]) {
        switch self {
        case .null:
            buffer.append(contentsOf: JSONTextWriter.null)
        case .bool(let value):
            buffer.append(contentsOf: value ? JSONTextWriter.true : JSONTextWriter.false)
        case .integer(let value):
            JSONTextWriter.writeInteger(value, into: &buffer)
        case .number(let value):
            JSONTextWriter.writeDouble(value, into: &buffer)
        case .string(let value):
            JSONTextWriter.writeString(value, into: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                element.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            buffer.append(UInt8(ascii: "{"))
            var first = true
            for (key, value) in members {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                JSONTextWriter.writeString(key, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                value.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// The compact JSON text as UTF-8 bytes.
    public var jsonBytes: [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64)
        write(into: &buffer)
        return buffer
    }

    /// The compact JSON text.
    public var jsonString: String {
        String(decoding: jsonBytes, as: UTF8.self)
    }
}

private enum JSONTextWriter {
    static let null: [UInt8] = Array("null".utf8)
    static let `true`: [UInt8] = Array("true".utf8)
    static let `false`: [UInt8] = Array("false".utf8)
    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeInteger(_ value: Int64, into buffer: inout [UInt8]) {
        // Digits are produced right to left into a stack buffer; 20 bytes
        // hold Int64.min with its sign.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            if value < 0 {
                index -= 1
                digits[index] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    static func writeDouble(_ value: Double, into buffer: inout [UInt8]) {
        guard value.isFinite else {
            buffer.append(contentsOf: null)
            return
        }
        // `description` is the shortest text that parses back to the same
        // double, and its forms ("1.0", "-0.0", "1e-07", "1e+16") are all
        // valid JSON numbers.
        var text = value.description
        text.withUTF8 { buffer.append(contentsOf: $0) }
    }

    static func writeString(_ string: String, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            // Unescaped runs are copied in bulk; only '"', '\' and control
            // characters interrupt them.
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                    continue
                }
                if runStart < index {
                    buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                }
                appendEscape(for: byte, into: &buffer)
                runStart = index + 1
            }
            if runStart < utf8.count {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    static func appendEscape(for byte: UInt8, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case 0x08: buffer.append(UInt8(ascii: "b"))
        case 0x0C: buffer.append(UInt8(ascii: "f"))
        case 0x0A: buffer.append(UInt8(ascii: "n"))
        case 0x0D: buffer.append(UInt8(ascii: "r"))
        case 0x09: buffer.append(UInt8(ascii: "t"))
        default:
            buffer.append(UInt8(ascii: "u"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(hexDigits[Int(byte >> 4)])
            buffer.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}
