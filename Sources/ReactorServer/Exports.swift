// The server's API speaks JSON (hosted states, events, problems): its users get the JSON types with it.
@_exported import ReactorJSON
