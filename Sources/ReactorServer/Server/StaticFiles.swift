/// A few files served from memory (the dashboard, the API description): loaded once at start, each
/// with its content type and an entity tag, answered 304 to a matching `If-None-Match`.
public struct StaticFiles: Sendable {
    public struct File: Sendable {
        public let contentType: HTTPContentType
        public let bytes: [UInt8]
        let etag: String

        public init(contentType: String, bytes: [UInt8]) {
            self.contentType = HTTPContentType(contentType)
            self.bytes = bytes
            etag = "\"" + String(CRC32C.checksum(bytes), radix: 16) + "-" + String(bytes.count, radix: 16) + "\""
        }
    }

    public private(set) var files: [String: File] = [:]

    public init() {}

    /// Serves `file` at `path` (GET and HEAD), to anyone.
    public mutating func add(_ path: String, _ file: File) {
        files[path] = file
    }

    public func register(in router: inout Router) {
        for (path, file) in files {
            router.add(.get, path, scope: nil) { request, _, respond in
                if let match = request.headers["If-None-Match"], EntityTag.matches(match, etag: file.etag) {
                    return respond(HTTPResponse(status: .notModified, headers: [("ETag", file.etag)]))
                }
                respond(HTTPResponse(status: .ok, contentType: file.contentType, headers: [("ETag", file.etag), ("Cache-Control", "no-cache")], body: file.bytes))
            }
        }
    }
}
