import Reactor
import XCTest

/// The README's example, kept compiling and true.
final class ReadmeExampleTests: XCTestCase {
    struct Player: Sendable { var name: String; var level = 1 }
    struct RPGState: State {
        var players: [Player] = []
        mutating func react(to event: Event) {
            if let event = event as? LevelUp { players[event.playerID].level += 1 }
        }
    }
    struct LevelUp: Event { let playerID: Int }

    final class PlayerView: Subscriber, @unchecked Sendable {
        // @unchecked Sendable: written on the core's executor, read after the test drained it.
        var lines: [String] = []
        func update(with state: Player) { lines.append("\(state.name) is level \(state.level)") }
    }

    func testTheReadmeExample() {
        let core = Core(state: RPGState(players: [Player(name: "Ayla")]))
        let view = PlayerView()
        core.add(subscriber: view, selector: { $0.players[0] })
        core.fire(event: LevelUp(playerID: 0))
        core.drain()
        XCTAssertEqual(view.lines, ["Ayla is level 1", "Ayla is level 2"])
    }
}
