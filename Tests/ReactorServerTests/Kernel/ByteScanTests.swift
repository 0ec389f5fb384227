import ByteWords
import TestSupport
import XCTest

/// `ByteScan` and `ByteWord` against a byte-at-a-time reading of the same buffers, at every start
/// and length, so that the word steps, the byte tail and the lowest-lane rule all get exercised.
final class ByteScanTests: XCTestCase {
    /// Buffers of bytes drawn mostly from the ones the scans stop at, so that matches fall in every lane.
    private func buffers(_ random: inout SeededRandom, count: Int) -> [[UInt8]] {
        let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x22, 0x3A, 0x5C, 0x7F, 0x80, 0xC3, 0xFF, 0x61, 0x41, 0x2D]
        return (0..<count).map { _ in
            (0..<Int.random(in: 0...40, using: &random)).map { _ in
                Bool.random(using: &random) ? interesting.randomElement(using: &random)! : UInt8(ascii: "a")
            }
        }
    }

    func testFirstIndexFindsTheFirstStoppingByteOrTheEnd() {
        var random = SeededRandom(seed: 0xB17E)
        let stops: [(name: String, word: (ByteWord) -> UInt64, byte: (UInt8) -> Bool)] = [
            ("colon", { $0.lanes(equalTo: 0x3A) }, { $0 == 0x3A }),
            ("colon or space", { $0.lanes(equalTo: 0x3A) | $0.lanes(equalTo: 0x20) }, { $0 == 0x3A || $0 == 0x20 }),
            ("not ASCII", { $0.nonASCIILanes }, { $0 >= 0x80 }),
            ("control", { $0.lanes(below: 0x20) }, { $0 < 0x20 }),
            (
                "ends a JSON string's plain run",
                { $0.lanes(equalTo: 0x22) | $0.lanes(equalTo: 0x5C) | $0.lanes(below: 0x20) | $0.nonASCIILanes },
                { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || $0 >= 0x80 }
            ),
        ]
        for bytes in buffers(&random, count: 400) {
            bytes.withUnsafeBytes { raw in
                let base = raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
                for stop in stops {
                    for start in 0...bytes.count {
                        let expected = bytes[start...].firstIndex(where: stop.byte) ?? bytes.count
                        let found = ByteScan.firstIndex(in: base, from: start, to: bytes.count, wordStops: stop.word, byteStops: stop.byte)
                        XCTAssertEqual(found, expected, "\(stop.name) from \(start) in \(bytes)")
                    }
                }
            }
        }
    }

    func testEqualComparesEveryByteAndFoldsCaseWhenAsked() {
        var random = SeededRandom(seed: 0xE0A1)
        for bytes in buffers(&random, count: 300) where !bytes.isEmpty {
            var other = bytes
            XCTAssertTrue(ByteScan.equal(bytes, other, count: bytes.count))
            let changed = Int.random(in: 0..<bytes.count, using: &random)
            other[changed] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            XCTAssertFalse(ByteScan.equal(bytes, other, count: bytes.count), "byte \(changed) of \(bytes)")
            // Only the bytes before the change are compared.
            XCTAssertTrue(ByteScan.equal(bytes, other, count: changed))
        }
        let mixed = Array("Content-Type-And-More".utf8), lower = Array("content-type-and-more".utf8)
        XCTAssertTrue(ByteScan.equal(mixed, lower, count: mixed.count, settingBits: 0x20))
        XCTAssertFalse(ByteScan.equal(mixed, lower, count: mixed.count))
    }

    func testAWordStoresTheBytesItLoaded() {
        var bytes: [UInt8] = Array(0..<12)
        bytes.withUnsafeMutableBytes { raw in
            let word = ByteWord(loadingFrom: raw.baseAddress!, at: 3)
            XCTAssertEqual(word.bits & 0xFF, 3, "lane 0 is the first byte in memory")
            XCTAssertEqual(ByteWord.firstLane(of: word.lanes(equalTo: 7)), 4)
            ByteWord(bits: word.bits ^ ByteWord.repeating(0xFF)).store(to: raw.baseAddress!, at: 3)
        }
        XCTAssertEqual(bytes, [0, 1, 2] + (3..<11).map { ~UInt8($0) } + [11])
    }
}
