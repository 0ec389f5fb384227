import Reactor
import ReactorServer

/// The seed's own example, hosted: players who level up.
public struct Player: Codable, Equatable, Sendable {
    public var name: String
    public var level: Int

    public init(name: String, level: Int = 1) {
        self.name = name
        self.level = level
    }
}

public struct RPGState: HostedState, Codable, Equatable {
    public var players: [Player]

    public init(players: [Player] = []) {
        self.players = players
    }

    public mutating func react(to event: Event) {
        try? apply(event)
    }

    public mutating func apply(_ event: Event) throws {
        switch event {
        case let event as AddPlayer:
            guard !event.name.isEmpty else { throw EventRejection("a player needs a name") }
            players.append(Player(name: event.name))
        case let event as LevelUp:
            guard players.indices.contains(event.playerID) else {
                throw EventRejection("there is no player \(event.playerID); player ids are 0 to \(players.count - 1)")
            }
            players[event.playerID].level += 1
        default:
            throw EventRejection("RPGState does not handle \(type(of: event))")
        }
    }

    public static let eventRegistry: EventRegistry<RPGState> = {
        var registry = EventRegistry<RPGState>()
        registry.register(AddPlayer.self, as: "addPlayer")
        registry.register(LevelUp.self, as: "levelUp")
        return registry
    }()
}

public struct AddPlayer: Event, Codable, Equatable {
    public let name: String
    public init(name: String) { self.name = name }
}

public struct LevelUp: Event, Codable, Equatable {
    public let playerID: Int
    public init(playerID: Int) { self.playerID = playerID }
}
