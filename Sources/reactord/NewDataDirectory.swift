import Foundation

/// A data directory as it was before a start that may create it, when it held nothing: what to
/// remove if the start then fails.
struct NewDataDirectory {
    let path: String
    let existed: Bool

    /// Nil when the directory holds something already: a failed start leaves that as it is.
    init?(path: String) {
        self.path = path
        existed = FileManager.default.fileExists(atPath: path)
        guard !existed || (try? FileManager.default.contentsOfDirectory(atPath: path))?.isEmpty == true else { return nil }
    }

    /// Removes what the start made: the directory, or only its contents if it was there, empty.
    func remove() {
        if !existed {
            try? FileManager.default.removeItem(atPath: path)
            return
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            try? FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }
}
