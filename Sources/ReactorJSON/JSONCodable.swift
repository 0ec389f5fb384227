// The one file allowed to use Foundation: its JSONEncoder/JSONDecoder are the
// bridge between typed Codable states and `JSON`.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `JSON` as a Codable value, so it can be a field of a Codable type and pass
/// through any encoder unchanged.
extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        // Objects are read through a keyed container rather than as a
        // [String: JSON], to keep whatever member order the decoder reports.
        if let keyed = try? decoder.container(keyedBy: AnyCodingKey.self) {
            var members = Object()
            for key in keyed.allKeys {
                members[key.stringValue] = try keyed.decode(JSON.self, forKey: key)
            }
            self = .object(members)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "value is not representable as JSON")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var keyed = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, value) in members {
                try keyed.encode(value, forKey: AnyCodingKey(key))
            }
        case .array(let elements):
            var unkeyed = encoder.unkeyedContainer()
            for element in elements {
                try unkeyed.encode(element)
            }
        default:
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            // Encoders reject non-finite doubles by default; null matches
            // what the serializer writes for them.
            case .number(let value) where !value.isFinite: try container.encodeNil()
            case .number(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .array, .object: break  // handled above
            }
        }
    }
}

/// A coding key for arbitrary member names.
private struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) { self.stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension JSON {
    /// The JSON form of a Codable value, produced by Foundation's
    /// `JSONEncoder` and read back by this module's parser.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self = try JSON(parsing: [UInt8](data))
    }

    /// Decodes a Codable value from this JSON with Foundation's `JSONDecoder`.
    public func decode<Value: Decodable>(
        _ type: Value.Type, decoder: JSONDecoder = JSONDecoder()
    ) throws -> Value {
        try decoder.decode(type, from: Data(jsonBytes))
    }
}
