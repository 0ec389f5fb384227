/// The document never nests deeper than `JSON.maximumDepth`: an event that would take it there is
/// refused before anything changes, so every state the server acknowledges can be written as a
/// snapshot and parsed back, and no edit walks a path longer than that (the walk recurses per token).
extension DocumentEvent {
    /// Throws when applying the event could leave the document deeper than the limit. Counted from
    /// the event alone: a value put `n` tokens down nests `n` levels plus its own. A JSON Patch is
    /// checked operation by operation as it is applied (`JSONPatch.apply`).
    func checkDepth() throws(EventRejection) {
        switch self {
        case .set(let path, let value), .merge(let path, let value):
            try Self.check(value, below: path.tokens.count)
        case .append(let path, let value):
            // A missing target is created as an array around the value.
            try Self.check(value, below: path.tokens.count + 1)
        case .increment(let path, _):
            try Self.check(.null, below: path.tokens.count)
        case .remove, .patch:
            // A removal makes nothing deeper, and walks only a path that exists.
            return
        }
    }

    private static func check(_ value: JSON, below levels: Int) throws(EventRejection) {
        let room = JSON.maximumDepth - levels
        guard room < 0 || value.nestingDepth(upTo: room) > room else { return }
        let valueLevels = value.nestingDepth(upTo: JSON.maximumDepth)
        throw EventRejection(
            "the document would nest more than \(JSON.maximumDepth) levels deep, the most it may: the path is \(levels) levels down"
                + (valueLevels > 0 ? " and the value nests \(valueLevels) more" : ""),
            kind: .tooDeep)
    }
}
