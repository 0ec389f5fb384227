/// One edit in progress, so that each rejection says what could not be done where, and why:
/// "cannot increment /counter: it is a string, not a number".
struct DocumentEdit {
    /// The verb: "set", "remove", "append to"... Static text: the walk down the path copies the
    /// edit into each closure it passes, and a `String` would be retained for each copy.
    let action: StaticString
    let pointer: JSONPointer

    /// The depth of the last token, which the parent container holds.
    var lastDepth: Int { pointer.tokens.count - 1 }

    func reject(_ detail: String) -> EventRejection {
        EventRejection("cannot \(action) \(location(depth: pointer.tokens.count)): \(detail)")
    }

    /// The pointer to the value reached after `depth` tokens, for messages; the root reads as
    /// "the document", since "" would print as nothing at all.
    func location(depth: Int) -> String {
        depth == 0 ? "the document" : JSONPointer(tokens: Array(pointer.tokens[..<depth])).string
    }

    /// The value reached after `depth` tokens is a scalar, so the next token cannot step into it.
    func scalarInTheWay(depth: Int, found: JSON) -> EventRejection {
        reject("\(location(depth: depth)) is \(found.typeNameWithArticle), not an object or array")
    }

    func notAnIndex(_ token: String, ofArrayAtDepth depth: Int) -> EventRejection {
        reject("\(location(depth: depth)) is an array and \"\(token)\" is not an index (use 0, 1, ...)")
    }

    /// The index a token names in the array reached after `depth` tokens, which must exist.
    func existingIndex(_ token: String, ofArrayAtDepth depth: Int, count: Int) throws(EventRejection) -> Int {
        guard let index = JSONPointer.arrayIndex(from: token) else {
            if token == "-" {
                throw reject("\"-\" designates no existing element of \(location(depth: depth))")
            }
            throw notAnIndex(token, ofArrayAtDepth: depth)
        }
        guard index < count else {
            throw reject("index \(index) is out of bounds for \(location(depth: depth)), which has \(Self.elementCount(count))")
        }
        return index
    }

    /// "1 element", "3 elements".
    static func elementCount(_ count: Int) -> String {
        count == 1 ? "1 element" : "\(count) elements"
    }
}
