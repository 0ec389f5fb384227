import Foundation
import Synchronization

/// What a server wrote to its standard error so far.
final class ProcessLog: Sendable {
    private let contents = Mutex("")

    var text: String { contents.withLock { $0 } }

    func append(_ data: Data) {
        contents.withLock { $0 += String(decoding: data, as: UTF8.self) }
    }
}
