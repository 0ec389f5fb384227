/// A Redis reply (RESP), as hiredis parses it: what the cluster's scripts and reads answer.
public enum RedisReply: Sendable, Equatable {
    case status(String)
    case error(String)
    /// No reply came: the connection closed first (Redis stopped answering, or the connection was
    /// closed). Unlike an error, the command may have run.
    case unanswered(String)
    case integer(Int64)
    case bulk([UInt8])
    case null
    case array([RedisReply])

    public var integer: Int64? {
        switch self {
        case .integer(let value): return value
        case .bulk(let bytes): return Int64(String(decoding: bytes, as: UTF8.self))
        default: return nil
        }
    }

    public var string: String? {
        switch self {
        case .bulk(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let text): return text
        default: return nil
        }
    }

    public var bytes: [UInt8]? {
        if case .bulk(let bytes) = self { return bytes }
        return nil
    }

    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// What an error reply says, or why no reply came.
    public var errorMessage: String? {
        switch self {
        case .error(let message), .unanswered(let message): return message
        default: return nil
        }
    }

    /// A flat array of field, value pairs (HGETALL, a stream entry's fields) as a dictionary.
    public var fields: [String: [UInt8]]? {
        guard let elements, elements.count % 2 == 0 else { return nil }
        var fields: [String: [UInt8]] = [:]
        for index in stride(from: 0, to: elements.count, by: 2) {
            guard let name = elements[index].string, let value = elements[index + 1].bytes else { return nil }
            fields[name] = value
        }
        return fields
    }
}

/// A command in RESP, the form Redis reads: `*N\r\n` then `$len\r\narg\r\n` per argument. Built
/// here so that a command with a payload of any bytes is one buffer handed to hiredis as it is.
public enum RedisCommand {
    public static func encode(_ arguments: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.count + 16 })
        bytes.append(UInt8(ascii: "*"))
        bytes.appendDecimal(UInt64(arguments.count))
        bytes.append(contentsOf: [13, 10])
        for argument in arguments {
            bytes.append(UInt8(ascii: "$"))
            bytes.appendDecimal(UInt64(argument.count))
            bytes.append(contentsOf: [13, 10])
            bytes.append(contentsOf: argument)
            bytes.append(contentsOf: [13, 10])
        }
        return bytes
    }

    public static func encode(_ arguments: [String]) -> [UInt8] {
        encode(arguments.map { Array($0.utf8) })
    }
}
