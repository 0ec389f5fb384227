/// What a node says to Redis before anything else (`AUTH`): from the user information of `--redis`,
/// `redis://:PASSWORD@HOST:PORT` for Redis's default user (`requirepass`) or
/// `redis://USER:PASSWORD@HOST:PORT` for an ACL user, percent-encoded as in any URL.
public struct RedisCredentials: Sendable, Equatable, CustomStringConvertible {
    public var username: String?
    public var password: String

    public init(username: String?, password: String) {
        self.username = username
        self.password = password
    }

    /// The credentials in a URL's user information (what comes before `@`), percent-decoded; nil
    /// when that is not `[USER]:PASSWORD`.
    public init?(userInformation: Substring) {
        guard let colon = userInformation.firstIndex(of: ":"),
              let username = Self.percentDecoded(userInformation[..<colon]),
              let password = Self.percentDecoded(userInformation[userInformation.index(after: colon)...]),
              !password.isEmpty else { return nil }
        self.init(username: username.isEmpty ? nil : username, password: password)
    }

    var authCommand: [UInt8] {
        RedisCommand.encode(username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
    }

    /// Never the password: this is what logs and errors show.
    public var description: String { (username ?? "default") + ":***" }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2, let high = hexValue(utf8.popFirst()!), let low = hexValue(utf8.popFirst()!) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
