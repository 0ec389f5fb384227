import Reactor

/// The bound on JSON Patch `copy`: the one edit whose result can be far larger than the event that
/// asked for it (a copy shares its value's storage, so copying what was just copied doubles the
/// document's text at no cost to the request). An event's copies may add at most as much JSON as
/// a request body may hold, and the events of one request may copy in one of them only, so that no
/// request grows the document by more than a body's worth.
extension JSONDocument {
    public func admissionProblem(of event: any Event, bodyLimit: Int) -> EventRejection? {
        // Read in place (`withEvent`): a cast would copy the event, for every event admitted. The
        // copies first: the names' check tries a patch's operations one at a time, each copy then
        // measured against a bound of its own, and must not try more copying than one patch may do.
        withEvent(event, as: DocumentEvent.self) { event in
            if case .patch(let operations) = event, Self.copies(in: operations), let problem = copyProblem(of: operations, bodyLimit: bodyLimit) {
                return problem
            }
            return memberNameProblem(of: event, bodyLimit: bodyLimit)
        } ?? nil
    }

    /// Whether `operations` copy more than `bodyLimit` bytes of JSON, tried on a copy of the document.
    private func copyProblem(of operations: [JSONPatchOperation], bodyLimit: Int) -> EventRejection? {
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
