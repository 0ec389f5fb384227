/// Names a history of versions. Version N means one state only within one history: the name stays
/// the same as long as versions keep their meaning (across restarts on one data directory, across
/// a cluster's nodes) and is drawn anew wherever numbering starts over (a server without a data
/// directory, at each start; a new or imported data directory; a new cluster). A subscriber
/// resuming with `since=N` names the history N came from, so that a server that started over is
/// not taken for the one it left.
enum HistoryName {
    /// A new name: 64 random bits, as 16 lowercase hex digits.
    static func random() -> String {
        let bits = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - bits.count) + bits
    }

    /// The history of a resume point this server cannot read (an SSE id of another format): empty,
    /// so never well-formed, never any server's, and a subscriber resuming in it gets a snapshot.
    static let unknown = ""

    /// Whether `text` can be a history's name as a client sends it back (`history=`): what this
    /// server draws, or a cluster's epoch.
    static func isWellFormed<Text: StringProtocol>(_ text: Text) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { HTTPASCII.isTokenByte($0) }
    }
}
