@testable import Reactor
import XCTest

final class AtomicInboxTests: XCTestCase {
    static func contract(_ inbox: AtomicInbox<Int>) -> InboxContract {
        InboxContract(push: { inbox.push($0) }, takeAll: { inbox.takeAll($0) }, endTaking: { inbox.endTaking() }, isEmpty: { inbox.isEmpty })
    }

    func testOnlyAPushThatFindsTheInboxIdleAsksForAWakeUp() {
        Self.contract(AtomicInbox<Int>()).checkWakeUps()
    }

    func testManyProducersOneConsumerLoseNothingAndKeepEachProducersOrder() {
        Self.contract(AtomicInbox<Int>()).checkManyProducers(perProducer: 20_000)
    }
}
