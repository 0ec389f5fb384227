/// RFC 7386 JSON Merge Patch: an object patch sets members, and a null
/// member deletes; any other patch value replaces the target outright.
public enum JSONMergePatch {
    /// Applies `patch` to `target` in place.
    public static func apply(_ patch: JSON, to target: inout JSON) {
        guard case .object(let patchMembers) = patch else {
            target = patch
            return
        }
        var members: JSON.Object
        if case .object(let existing) = target {
            members = existing
        } else {
            members = [:]
        }
        // Releasing the target's reference leaves `members` unique, so the
        // changes below happen in place rather than on a copy.
        target = .null
        for (key, value) in patchMembers {
            if value.isNull {
                members.removeValue(forKey: key)
            } else if let index = members.index(forKey: key) {
                apply(value, to: &members.values[index])
            } else {
                // Still merged rather than stored: nulls nested in a new
                // object patch must disappear, as in the RFC's algorithm.
                var fresh = JSON.null
                apply(value, to: &fresh)
                members[key] = fresh
            }
        }
        target = .object(members)
    }

    /// The result of applying `patch` to `target`.
    public static func applying(_ patch: JSON, to target: JSON) -> JSON {
        var result = target
        apply(patch, to: &result)
        return result
    }
}

extension JSON {
    /// Applies an RFC 7386 merge patch in place.
    public mutating func apply(mergePatch patch: JSON) {
        JSONMergePatch.apply(patch, to: &self)
    }
}
