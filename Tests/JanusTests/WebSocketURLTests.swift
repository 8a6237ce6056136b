import Janus
import Logging
import Testing

/// WSClient's own URL parser reads the host up to the first ":": `ws://user:pw@host` would
/// reach host `user`, `ws://[::1]:8188` host `[`. TextWebSocket refuses such URLs before any
/// connection, saying why (issue 25).
@Suite struct WebSocketURLTests {
    @Test("a URL with user:password@ or an IPv6 literal is refused at once, naming the reason", arguments: [
        ("ws://user:pw@127.0.0.1:9", "user or password"), ("ws://user@127.0.0.1:9", "user or password"),
        ("ws://[::1]:9", "IPv6 literal"), ("ws://[::1]", "IPv6 literal"),
    ])
    func refusedBeforeConnecting(url: String, reason: String) async {
        let started = ContinuousClock.now
        do {
            let session = try await JanusSession.connect(url: url, logger: Logger(label: "test"))
            await session.close()
            Issue.record("\(url) connected")
        } catch {
            #expect(error.isUnreachable && error.description.contains(reason), "\(url): \(error)")
        }
        // The reason above is the parser's, so no connection was attempted; the bound only
        // catches a connect left to its 10 s handshake limit.
        #expect(ContinuousClock.now - started < .seconds(8), "no connection attempted")
    }
}
