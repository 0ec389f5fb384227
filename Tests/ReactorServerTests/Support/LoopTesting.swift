import Dispatch
@testable import ReactorServer
import XCTest

extension EventLoop {
    /// Runs `body` on the loop's thread and waits, 10 s at most, for it to finish with a value: for
    /// tests that drive what lives on a loop (a core, a pipeline) from the test's own thread.
    func runAndWait<T: Sendable>(_ body: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void,
                            file: StaticString = #filePath, line: UInt = #line) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        enqueue {
            body { value in
                result.withLock { $0 = value }
                done.signal()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the loop answered in time", file: file, line: line)
        return result.withLock { $0! }
    }
}
