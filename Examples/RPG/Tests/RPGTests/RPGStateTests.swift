import RPG
import Reactor
import ReactorServer
import XCTest

final class RPGStateTests: XCTestCase {
    func testTheSeedsExampleLevelsUpAPlayerThroughTheCore() async throws {
        let core = Core(state: RPGState(players: [Player(name: "Ayla")]))
        let version = try await core.fireAndWait(event: LevelUp(playerID: 0))
        XCTAssertEqual(version, 1)
        XCTAssertEqual(core.state.players, [Player(name: "Ayla", level: 2)])
    }

    func testAnUnknownPlayerIsRejectedAndTheStateKept() async {
        let core = Core(state: RPGState(players: [Player(name: "Ayla")]))
        do {
            _ = try await core.fireAndWait(event: LevelUp(playerID: 3))
            XCTFail("an unknown player was levelled up")
        } catch let rejection as EventRejection {
            XCTAssertEqual(rejection.reason, "there is no player 3; player ids are 0 to 0")
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertEqual(core.version, 0)
    }

    func testEventsDecodeFromTheirJSONByType() throws {
        let registry = RPGState.eventRegistry
        XCTAssertEqual(registry.knownTypes, ["addPlayer", "levelUp"])
        let event = try registry.decode(JSON(parsing: #"{"type":"levelUp","playerID":1}"#))
        XCTAssertEqual(event as? LevelUp, LevelUp(playerID: 1))
        XCTAssertEqual(registry.typeName(of: event), "levelUp")
        XCTAssertThrowsError(try registry.decode(JSON(parsing: #"{"type":"levelUp","playerID":"one"}"#))) { error in
            guard case EventDecodingError.invalidFields(let type, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(type, "levelUp")
        }
    }

    func testTheStateEncodesAsJSON() throws {
        let json = try RPGState(players: [Player(name: "Ayla", level: 3)]).jsonValue()
        XCTAssertEqual(json, ["players": [["name": "Ayla", "level": 3]]])
    }
}
