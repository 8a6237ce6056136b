import Foundation
import Testing
import TestSupport

extension MediaScene.ServeRelayTests {
    /// `relay.started`, `relay.reconnecting` and `relay.ended` (issue 43 item 6), signed and
    /// verified by the Standard Webhooks receiver: a destination down at the start is one outage
    /// however many retries it takes, its coming up is `relay.started` after it, and the end
    /// says the job failed for the frames the destination missed.
    @Test("relay webhooks: an RTMP server down at the start is one relay.reconnecting, its start relay.started after it, DELETE relay.ended with the reason; the stream name never shows")
    func relayWebhooks() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("serve-relay-webhooks")
        let receiver = try await WebhookReceiver.start(port: try RelayServers.freePort(), in: dir, seed: 5)
        let source = try await RelayCase.source(in: dir)
        let port = try RelayServers.freePort()
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        defer { publisher.signal(SIGKILL) }
        let serve = try await ServeProcess.start(port: 18657, in: dir, extra: ["--relay-allow", "rtmp://127.0.0.1:\(port)/live"] + receiver.flags)
        defer { serve.process.signal(SIGKILL) }
        func events(_ type: String) -> [[String: Any]] { receiver.events(type: type) }
        let stream = "secret-\(UUID().uuidString.prefix(8))"
        let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "participant": "7",
                                                                           "to": "rtmp://127.0.0.1:\(port)/live/\(stream)"])
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")

        // Nothing listens: refused, retried with backoff; one outage, announced once.
        #expect(await eventually(within: 40) { !events("relay.reconnecting").isEmpty }, "relay.reconnecting while nginx is down")
        try await Task.sleep(for: .seconds(4))   // several retries, still the same outage
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        #expect(await eventually(within: 30) { !events("relay.started").isEmpty }, "relay.started once nginx took the stream")
        let down = events("relay.reconnecting"), up = events("relay.started")
        #expect(down.count == 1 && down.first?["id"] as? String == "\(id).relay-reconnecting.0.1" && down.first?["valid"] as? Bool == true, "\(down)")
        let outage = try #require(down.first?["data"] as? [String: Any])
        #expect((outage["reason"] as? String ?? "").isEmpty == false && outage["since"] != nil && outage["outage"] as? Int == 1, "\(outage)")
        #expect(up.count == 1 && up.first?["id"] as? String == "\(id).relay-started.0.1", "started after the first outage: \(up)")
        #expect((outage["to"] as? String ?? "").hasPrefix("rtmp://127.0.0.1:\(port)/live"), "\(outage)")

        let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
        // Frames opened while nginx was down never reached it: the job says so.
        #expect(final["state"] as? String == "failed", "\(final)")
        #expect(await eventually(within: 20) { !events("relay.ended").isEmpty }, "relay.ended")
        let ended = try #require(events("relay.ended").first?["data"] as? [String: Any])
        #expect(ended["outages"] as? Int == 1 && (ended["reason"] as? String ?? "").contains("not sent"), "\(ended)")
        let all = (try? String(contentsOf: receiver.received, encoding: .utf8)) ?? ""
        #expect(!all.contains(stream), "the stream name is a secret")
        print("serve relay webhooks: reconnecting \"\(outage["reason"] ?? "?")\", started after it, ended \"\(ended["reason"] ?? "?")\"")
        await nginx.stop()
        await receiver.stop()
    }
}
