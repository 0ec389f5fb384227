import Reactor

/// The bound on JSON Patch `copy`: the one edit whose result can be far larger than the event that
/// asked for it (a copy shares its value's storage, so copying what was just copied doubles the
/// document's text at no cost to the request). An event's copies may add at most as much JSON as
/// a request body may hold, and the events of one request may copy in one of them only, so that no
/// request grows the document by more than a body's worth.
extension JSONDocument {
    public func admissionProblem(of event: any Event, bodyLimit: Int) -> EventRejection? {
        // Read in place (`withEvent`): a cast would copy the event, for every event admitted.
        if let problem = withEvent(event, as: DocumentEvent.self, { memberNameProblem(of: $0, bodyLimit: bodyLimit) }) ?? nil { return problem }
        guard case .patch(let operations)? = event as? DocumentEvent, Self.copies(in: operations) else { return nil }
        // Tried on a copy of the document, with the bound; the event is then applied as any other.
        var trial = root
        do {
            try JSONPatch.apply(operations, to: &trial, copyLimit: bodyLimit)
        } catch where error.kind == .copiesTooMuch {
            return EventRejection(error, in: operations)
        } catch {
            // Refused for another reason, which applying it says.
        }
        return nil
    }

    public static func admissionProblem(ofRequestWith events: [any Event]) -> EventRejection? {
        var copying = 0
        for event in events {
            guard case .patch(let operations)? = event as? DocumentEvent, copies(in: operations) else { continue }
            copying += 1
        }
        guard copying > 1 else { return nil }
        return EventRejection("\(copying) events of this request copy with JSON Patch: one event of a request may copy (put the copy operations in one patch)", kind: .tooMuchGrowth)
    }

    private static func copies(in operations: [JSONPatchOperation]) -> Bool {
        operations.contains { if case .copy = $0 { true } else { false } }
    }
}
