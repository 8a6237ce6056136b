import Foundation
import Locking
import Synchronization
import Testing
import TestSupport
@testable import TextWebSocket

/// Binary messages (speaker streams' PCM) on the wire, and the bounded send queue: a server that
/// stops reading costs the client at most `maxQueuedMessages`, the rest is refused, never waited on.
@Suite struct WebSocketBinaryTests {
    @Test("text then binary go out in order, each a masked frame of its opcode")
    func textThenBinary() async throws {
        let server = try RawServer()
        defer { server.stop() }
        let frames = Locked<[WireFrame]>([])
        server.serve { c in
            guard RawServer.answerUpgrade(c) else { return }
            while let frame = WireFrame.read(c) {
                frames.withLock { $0.append(frame) }
                if frame.opcode == 8 { _ = RawServer.send(c, Oversized.frame(opcode: 8, fin: true, payload: Array(frame.payload.prefix(2)))); return }
            }
        }
        let socket = try await TextWebSocket.connect(url: "ws://127.0.0.1:\(server.port)/speakers/1", subprotocol: "janus-protocol", logger: Scene.logger)
        let pcm = (0..<3200).map { UInt8(truncatingIfNeeded: $0) }
        #expect(socket.enqueue(.text(#"{"type":"start"}"#)))
        #expect(socket.enqueue(.binary(pcm)))
        socket.close()
        await socket.closed()
        let seen = frames.withLock { $0 }
        #expect(seen.map(\.opcode) == [1, 2, 8], "\(seen)")
        #expect(seen.count == 3 && seen[1].payload == pcm && seen.allSatisfy(\.masked))
    }

    @Test("a server that reads nothing: sends beyond the queue's bound are refused, the sender never blocks")
    func slowServerIsBounded() async throws {
        let server = try RawServer()
        defer { server.stop() }
        let release = Locked(false)
        server.serve { c in
            guard RawServer.answerUpgrade(c) else { return }
            while !release.withLock({ $0 }) { usleep(20_000) }
        }
        var limits = TextWebSocket.Limits()
        limits.maxQueuedMessages = 8
        let socket = try await TextWebSocket.connect(url: "ws://127.0.0.1:\(server.port)/s", subprotocol: "janus-protocol", limits: limits,
                                                     logger: Scene.logger)
        let chunk = [UInt8](repeating: 7, count: 64 << 10)
        let started = ContinuousClock.now
        var refused = 0
        for _ in 0..<600 where !socket.enqueue(.binary(chunk)) { refused += 1 }
        let took = started.duration(to: .now)
        print("ws bounded queue: 600 × 64 KiB to a server reading nothing: \(refused) refused in \(took)")
        #expect(refused > 0, "at most 8 wait (plus what the writer took): the rest is refused at once")
        #expect(took < .seconds(2), "sending never waits for the server")
        release.withLock { $0 = true }
        socket.close()
    }

    @Test("a listener: a path it serves is upgraded and its messages reach our client unmasked and in order; any other path is closed")
    func listenerServesItsPathsOnly() async throws {
        let listener = try await WebSocketListener.listen(host: "127.0.0.1", port: 0, limits: .init()) { $0.hasPrefix("/s/") }
        let served = Task { () -> String? in
            for await accepted in listener.accepted {
                #expect(accepted.socket.enqueue(.text("hello \(accepted.path)")))
                #expect(accepted.socket.enqueue(.binary([1, 2, 3])))
                accepted.socket.close()
                return accepted.path
            }
            return nil
        }
        let client = try await TextWebSocket.connect(url: "ws://127.0.0.1:\(listener.port)/s/7?token=x", subprotocol: "sfubot-speaker.v1", logger: Scene.logger)
        var texts: [String] = []
        for await text in client.incoming { texts.append(text) }
        #expect(texts == ["hello /s/7"], "the text message, the query not in the path")
        #expect(await served.value == "/s/7")
        await #expect(throws: TextWebSocket.Unreachable.self) {
            _ = try await TextWebSocket.connect(url: "ws://127.0.0.1:\(listener.port)/other", subprotocol: "x", logger: Scene.logger)
        }
        await listener.close()
    }
}
