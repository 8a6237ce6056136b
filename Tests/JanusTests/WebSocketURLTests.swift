import Janus
import Logging
import Testing

/// URLs are read with URLComponents (issue 25): a user or password in the URL, another scheme,
/// a port out of range or a malformed IPv6 literal are refused before any connection, saying why.
@Suite struct WebSocketURLTests {
    @Test("a URL with user:password@, another scheme, a bad port or a malformed IPv6 literal is refused at once, naming the reason", arguments: [
        ("ws://user:pw@127.0.0.1:9", "user or password"), ("ws://user@127.0.0.1:9", "user or password"),
        ("ftp://127.0.0.1:9", "not a ws:// or wss:// URL"), ("ws://127.0.0.1:0", "port must be 1 to 65535"),
        ("ws://[::1x]:9", "not an IPv6 address"), ("ws://[1:2:3:4:5:6:7:8:9]:9", "not an IPv6 address"),
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
