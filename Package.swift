// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Reactor",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reactor", targets: ["Reactor"]),
        .library(name: "ReactorJSON", targets: ["ReactorJSON"]),
        .library(name: "ReactorServer", targets: ["ReactorServer"]),
        .library(name: "ReactorClient", targets: ["ReactorClient"]),
        .executable(name: "reactord", targets: ["reactord"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.0"),
    ],
    targets: [
        // The C seam: libuv (event loop), llhttp (HTTP parser), OpenSSL's libcrypto (SHA-1, HMAC) and
        // hiredis (a cluster's shared log in Redis, driven on the loop by our own event hooks).
        .systemLibrary(
            name: "CUV",
            pkgConfig: "libllhttp",
            providers: [.apt(["libuv1-dev", "libssl-dev", "libhiredis-dev", "pkg-config"])]
        ),
        // Pure Swift: knows nothing of sockets, libuv or HTTP.
        .target(name: "Reactor"),
        // Eight bytes per step (SWAR): the word-at-a-time byte scans of the JSON parser and the server, in one place.
        .target(name: "ByteWords"),
        // JSON values, RFC 6901 pointers, RFC 6902 and 7386 patches: shared by the server and the clients.
        .target(name: "ReactorJSON", dependencies: ["ByteWords", .product(name: "OrderedCollections", package: "swift-collections")]),
        .target(
            name: "ReactorServer",
            dependencies: [
                "Reactor", "ReactorJSON", "ByteWords", "CUV",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .executableTarget(
            name: "reactord",
            dependencies: [
                "ReactorServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "reactor-core-bench",
            dependencies: ["Reactor"],
            path: "Benchmarks/CoreBenchmark"
        ),
        // The fan-out load generator: a WebSocket client on libuv, not on ReactorServer.
        .executableTarget(
            name: "reactor-bench",
            dependencies: ["CUV", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/ReactorBench"
        ),
        // The seed's RPG example as a typed hosted state, its server, and its tests.
        .target(name: "RPG", dependencies: ["Reactor", "ReactorServer"], path: "Examples/RPG/Sources/RPG"),
        .executableTarget(
            name: "rpg-server",
            dependencies: [
                "RPG", "ReactorServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/RPG/Sources/rpg-server"
        ),
        .testTarget(name: "RPGTests", dependencies: ["RPG", "ReactorServer", "Reactor"], path: "Examples/RPG/Tests/RPGTests"),
        // libFuzzer targets: scripts/fuzz.sh builds them with coverage and -DFUZZING; a plain build
        // makes them replay tools that run saved inputs (a crash's, say) through the same check.
        .target(name: "FuzzSupport", path: "Tests/Fuzz/Support"),
        .executableTarget(name: "fuzz-http-request", dependencies: ["ReactorServer", "FuzzSupport"], path: "Tests/Fuzz/HTTPRequestFuzzer"),
        .executableTarget(name: "fuzz-websocket-frames", dependencies: ["ReactorServer", "FuzzSupport"], path: "Tests/Fuzz/WebSocketFrameFuzzer"),
        .executableTarget(name: "fuzz-stream-entries", dependencies: ["ReactorServer", "FuzzSupport"], path: "Tests/Fuzz/StreamEntryFuzzer"),
        .executableTarget(name: "fuzz-json", dependencies: ["ReactorJSON", "FuzzSupport"], path: "Tests/Fuzz/JSONFuzzer"),
        .executableTarget(name: "fuzz-journal", dependencies: ["ReactorServer", "FuzzSupport"], path: "Tests/Fuzz/JournalFuzzer"),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor"]),
        // What the test targets share (a seeded random number generator).
        .target(name: "TestSupport", path: "Tests/Support"),
        .testTarget(name: "ReactorJSONTests", dependencies: ["ReactorJSON", "TestSupport"]),
        .testTarget(name: "ReactorServerTests", dependencies: ["ReactorServer", "ReactorJSON", "Reactor", "ByteWords", "TestSupport"]),
        // The Swift client: a Core mirrored from a reactord, on Foundation's URLSession (no libuv, so Apple platforms too).
        .target(name: "ReactorClient", dependencies: ["Reactor", "ReactorJSON"]),
        .testTarget(name: "ReactorClientTests", dependencies: ["ReactorClient"]),
    ],
    swiftLanguageModes: [.v6]
)
