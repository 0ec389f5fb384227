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

/// What a test made on a loop (a core, a pipeline and its handles), kept until the test ends and
/// released there on the loop's own thread. Released on the test's thread while the loop runs, such
/// objects would close their libuv handles from the wrong thread, racing the loop's callbacks.
/// @unchecked Sendable: `objects` is appended to on the test's thread, and emptied on the loop's
/// while the test's thread waits (`runAndWait`), never both at once.
final class LoopConfinedObjects: @unchecked Sendable {
    private var objects: [AnyObject] = []

    func keep(_ object: AnyObject) {
        objects.append(object)
    }

    /// Releases what was kept, on `loop`'s thread, and waits until that is done.
    func release(on loop: EventLoop) {
        let _: Bool = loop.runAndWait { [self] finish in
            objects.removeAll()
            finish(true)
        }
    }
}
