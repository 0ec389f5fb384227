import Foundation
@testable import ReactorServer
import XCTest

/// The routine lines (one per request, one per event) formatted by the server and written through
/// the loop's `LogOutput`, here into a pipe.
final class LogLineWriterTests: XCTestCase {
    private var loop: EventLoop!
    private var pipe: (read: Int32, write: Int32) = (-1, -1)

    override func setUpWithError() throws {
        loop = try EventLoop.startThread()
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&ends), 0)
        pipe = (ends[0], ends[1])
        XCTAssertEqual(fcntl(pipe.read, F_SETFL, fcntl(pipe.read, F_GETFL) | O_NONBLOCK), 0)
    }

    override func tearDown() {
        loop.stop()
        close(pipe.read)
        close(pipe.write)
    }

    /// What the pipe holds now, without waiting.
    private static func readNow(_ descriptor: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 65536)
        let count = read(descriptor, &bytes, bytes.count)
        return count > 0 ? String(decoding: bytes[..<count], as: UTF8.self) : ""
    }

    /// What the pipe holds within a second.
    private func readSoon() -> String {
        let deadline = Date().addingTimeInterval(1)
        while Date() < deadline {
            let text = Self.readNow(pipe.read)
            if !text.isEmpty { return text }
            usleep(1000)
        }
        return ""
    }

    func testLinesAreWrittenTogetherAtTheEndOfTheTurnAsStreamLogHandlerWritesThem() {
        let (reading, descriptor) = pipe
        let heldDuringTheTurn: String = loop.runAndWait { [loop] finish in
            let writer = LogLineWriter(output: LogOutput(descriptor: descriptor, batch: loop!.writeBatch), label: "reactord")
            writer.request(method: "POST", path: "/events"[...], status: 200, bytes: 13, id: 7, token: "-", microseconds: 42)
            writer.event(type: "set", version: 1)
            finish(Self.readNow(reading))
        }
        XCTAssertEqual(heldDuringTheTurn, "", "nothing is written during the turn")
        let lines = readSoon().split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, 3, "two lines, each ending in a newline: \(lines)")
        let time = #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}"#
        XCTAssertNotNil(lines[0].wholeMatch(of: try! Regex(time + #" info reactord: bytes=13 method=POST path=/events request-id=7 status=200 token=- us=42 \[ReactorServer\] request"#)), String(lines[0]))
        XCTAssertNotNil(lines[1].wholeMatch(of: try! Regex(time + #" info reactord: type=set version=1 \[ReactorServer\] event"#)), String(lines[1]))
        XCTAssertEqual(lines[2], "")
    }

    func testAValueWithControlCharactersStaysOnItsLine() {
        let descriptor = pipe.write
        let _: Bool = loop.runAndWait { [loop] finish in
            let writer = LogLineWriter(output: LogOutput(descriptor: descriptor, batch: loop!.writeBatch), label: "")
            writer.event(type: "a\nb\r\tc\u{1}é", version: 2)
            finish(true)
        }
        XCTAssertTrue(readSoon().hasSuffix(#" info: type=a\nb\r\tc\x01é version=2 [ReactorServer] event"# + "\n"))
    }

    func testTheTimeIsFormattedAsStrftimeFormatsIt() {
        let zone = getenv("TZ").map { String(cString: $0) }
        defer {
            if let zone { setenv("TZ", zone, 1) } else { unsetenv("TZ") }
            tzset()
        }
        setenv("TZ", "UTC", 1)
        tzset()
        XCTAssertEqual(String(decoding: LogLineWriter.localTime(1_795_000_000), as: UTF8.self), "2026-11-18T11:06:40+0000")
        setenv("TZ", "EST5", 1)
        tzset()
        XCTAssertEqual(String(decoding: LogLineWriter.localTime(1_795_000_000), as: UTF8.self), "2026-11-18T06:06:40-0500")
    }

    func testLinesThatDoNotFitGoOutInOrder() {
        let (reading, descriptor) = pipe
        let writtenDuringTheTurn: String = loop.runAndWait { [loop] finish in
            // A line larger than the whole buffer makes what is held go out, then goes out itself;
            // what comes after it is held again.
            let writer = LogLineWriter(output: LogOutput(descriptor: descriptor, batch: loop!.writeBatch, capacity: 500), label: "")
            writer.event(type: "first", version: 1)
            writer.event(type: "second", version: 2)
            writer.event(type: String(repeating: "x", count: 100), version: 3)
            writer.event(type: "fourth", version: 4)
            finish(Self.readNow(reading))
        }
        let types = { (text: String) in text.split(separator: "\n").map { $0.split(separator: " ")[2] } }
        XCTAssertEqual(types(writtenDuringTheTurn), ["type=first", "type=second", "type=" + String(repeating: "x", count: 100)])
        XCTAssertEqual(types(readSoon()), ["type=fourth"])
    }
}
