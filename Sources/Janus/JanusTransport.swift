public import TextWebSocket

/// What a `JanusSession` talks over: text messages in both directions. `TextWebSocket` is the
/// real one; tests use `JanusTesting.FakeJanus` to play Janus's side with no network.
public protocol JanusTransport: Sendable {
    /// Messages from Janus; finishes when the connection is gone.
    var incoming: AsyncStream<String> { get }
    /// Queues one message to Janus; never blocks.
    func send(_ text: String)
    /// Closes the connection after what is queued.
    func close()
    /// Returns once the connection has ended.
    func closed() async
    /// Why the transport itself closed the connection because Janus broke one of its limits
    /// (e.g. "a message over 4 MiB (the limit)"); nil otherwise.
    var violation: String? { get }
}

extension JanusTransport {
    public var violation: String? { nil }
}

extension TextWebSocket: JanusTransport {}
