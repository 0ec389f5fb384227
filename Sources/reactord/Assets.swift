import Foundation
import ReactorServer
import Yams

/// The files reactord serves besides its API: the dashboard at `/` and the API description at
/// `/openapi.json`. They live in the source tree (Clients/dashboard, Clients/js, docs/openapi.yaml);
/// an installation copies that layout under a share directory.
enum Assets {
    /// The first directory that has the dashboard: `--share-dir`, the installation's
    /// `<prefix>/share/reactord` beside the executable, or the source tree this reactord was built from.
    static func shareDirectory(_ configured: String?) -> String? {
        var candidates: [String] = []
        if let configured { candidates.append(configured) }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates.append(executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/reactord").path)
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path)
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/Clients/dashboard/index.html") }
    }

    /// Loads the files, or says which is missing or broken.
    static func load(from directory: String) throws -> StaticFiles {
        var files = StaticFiles()
        func read(_ relative: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: directory + "/" + relative) else {
                throw AssetError("cannot read \(directory)/\(relative)")
            }
            return [UInt8](data)
        }
        files.add("/", .init(contentType: "text/html; charset=utf-8", bytes: try read("Clients/dashboard/index.html")))
        files.add("/assets/dashboard.css", .init(contentType: "text/css; charset=utf-8", bytes: try read("Clients/dashboard/dashboard.css")))
        files.add("/assets/dashboard.js", .init(contentType: "text/javascript; charset=utf-8", bytes: try read("Clients/dashboard/dashboard.js")))
        files.add("/assets/reactor-client.js", .init(contentType: "text/javascript; charset=utf-8", bytes: try read("Clients/js/reactor-client.js")))
        let yaml = try read("docs/openapi.yaml")
        files.add("/openapi.json", .init(contentType: "application/json", bytes: try openAPIJSON(fromYAML: String(decoding: yaml, as: UTF8.self)).jsonBytes))
        return files
    }

    /// The YAML document as JSON, with its mappings in their written order.
    static func openAPIJSON(fromYAML text: String) throws -> JSON {
        guard let node = try Yams.compose(yaml: text) else { throw AssetError("docs/openapi.yaml is empty") }
        return try json(node)
    }

    private static func json(_ node: Node) throws -> JSON {
        switch node {
        case .scalar(let scalar):
            switch node.tag {
            case Tag(.null): return .null
            case Tag(.bool): return .bool(node.bool ?? false)
            case Tag(.int):
                guard let value = node.int else { throw AssetError("docs/openapi.yaml: \(scalar.string) does not fit a 64-bit integer") }
                return .integer(Int64(value))
            case Tag(.float):
                guard let value = node.float else { throw AssetError("docs/openapi.yaml: \(scalar.string) is not a number JSON can carry") }
                return .number(value)
            default: return .string(scalar.string)
            }
        case .mapping(let mapping):
            var members = JSON.Object()
            for (key, value) in mapping {
                guard let name = key.string else { throw AssetError("docs/openapi.yaml: a mapping key that is not a string") }
                members[name] = try json(value)
            }
            return .object(members)
        case .sequence(let sequence):
            return .array(try sequence.map(json))
        }
    }
}

struct AssetError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
