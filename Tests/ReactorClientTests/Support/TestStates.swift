import ReactorClient

/// reactord's document events, as a Swift app would declare them.
struct Increment: RemoteEvent, Equatable {
    static let eventType = "increment"
    var path: String
    var by = 1
}

struct SetValue: RemoteEvent {
    static let eventType = "set"
    var path: String
    var value: JSON
}

/// The typed states the tests decode the server's document as.
struct Counters: Decodable, Sendable, Equatable {
    var counter: Int
}

struct Player: Decodable, Sendable, Equatable {
    var name: String
    var level: Int
}

struct Game: Decodable, Sendable, Equatable {
    var players: [Player]
    var counter: Int
}

extension JSON {
    static let game: JSON = ["players": [["name": "Ayla", "level": 1], ["name": "Brom", "level": 5]], "counter": 0]
}
