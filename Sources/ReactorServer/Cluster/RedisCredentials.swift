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
              let username = HTTPPercentDecoding.decodeStrictly(userInformation[..<colon]),
              let password = HTTPPercentDecoding.decodeStrictly(userInformation[userInformation.index(after: colon)...]),
              !password.isEmpty else { return nil }
        self.init(username: username.isEmpty ? nil : username, password: password)
    }

    var authCommand: [UInt8] {
        RedisCommand.encode(username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
    }

    /// Never the password: this is what logs and errors show.
    public var description: String { (username ?? "default") + ":***" }
}
