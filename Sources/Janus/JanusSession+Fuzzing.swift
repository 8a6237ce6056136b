/// A package-visible door to the message routing, for the libFuzzer target `FuzzJanus`
/// (Sources/FuzzJanus): it sees what a handle would be told without a session or a socket.
extension JanusSession {
    /// The event `dispatch` hands a handle for `message`; nil when it carries none.
    package static func event(in message: JanusMessage) -> HandleEvent? { handleEvent(from: message) }
}
