/// Something a test needed did not happen: a server did not start, an answer or a state did not come.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
}
