import Foundation

/// Entity-tag comparison for conditional requests (RFC 9110 §13.1.2).
enum EntityTag {
    /// If-None-Match: `*`, or a list of entity tags, weak or strong (compared weakly).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }
}
