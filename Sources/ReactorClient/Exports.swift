// The client's API speaks Reactor's `Subscriber` and ReactorJSON's `JSON` and `JSONPointer`: its users
// get those types with it, as the server's users get the JSON types with ReactorServer.
@_exported import Reactor
@_exported import ReactorJSON
