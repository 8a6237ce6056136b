import Foundation
import Testing
import TestSupport

/// `job.reconnecting` (issue 27): serve on a Janus of the test's own, SIGKILLed under a
/// recording and a playback and restarted a second later with its rooms. Each job's outage is
/// announced once, signed (the receiver verifies it with the standardwebhooks library), with
/// its cause and its start; the jobs come back and end cleanly.
extension MediaScene {
@Suite struct ServeReconnectingTests {
    static let janusPort = 8227, receiverPort = 18662, servePort = 18663

    @Test("Janus SIGKILLed and restarted: a recording's and a playback's outages each arrive once as a signed job.reconnecting with cause and start")
    func janusKilled() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("serve-reconnecting")
        let secret = dir.appendingPathComponent("whsec"), log = dir.appendingPathComponent("received.jsonl")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 9, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        let receiver = try await LocalServer.python("webhook_receiver.py", ["\(Self.receiverPort)", secret.path, log.path], port: Self.receiverPort)
        do {
            try await OwnJanus.with(port: Self.janusPort, in: dir, rtpPorts: 12700...12799) { janus in
                try await run(dir, janus: janus, secret: secret, log: log)
            }
        } catch { Issue.record(error) }
        await receiver.stop()
    }

    func run(_ dir: URL, janus: OwnJanus, secret: URL, log: URL) async throws {
        let key = String(repeating: "7c", count: 32)
        let tone = try await Audio.tone(440, seconds: 2, in: dir)
        let serve = try await ServeProcess.start(port: Self.servePort, in: dir, janus: janus.url, extra: [
            "--webhook-url", "http://127.0.0.1:\(Self.receiverPort)/hooks", "--webhook-secret-file", secret.path,
        ])
        defer { serve.process.signal(SIGKILL) }
        let room = try await Scene.createPermanentRoom(janus.url)
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": dir.appendingPathComponent("rec").path])
        let id = try #require(try rec.json()["id"] as? String, "\(rec.text)")
        let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true])
        let playID = try #require(try play.json()["id"] as? String, "\(play.text)")
        _ = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
        }

        let killed = Date()
        try await janus.kill9()
        try await Task.sleep(for: .seconds(1))
        try await janus.restart()
        // Both back, each having counted its comeback.
        for (path, job) in [("recordings", id), ("playbacks", playID)] {
            let back = try await serve.waitFor("/v1/\(path)/\(job)", within: .seconds(60)) { s in
                s["state"] as? String == "running" && (s["reconnects"] as? Int ?? 0) >= 1
            }
            #expect(back["state"] as? String == "running", "\(path) \(job) came back: \(back)")
        }
        func events() -> [[String: Any]] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        func reconnecting(_ job: String) -> [[String: Any]] {
            events().filter { $0["type"] as? String == "job.reconnecting" && ($0["data"] as? [String: Any])?["job"] as? String == job }
        }
        let arrived = await eventually(within: 30) { !reconnecting(id).isEmpty && !reconnecting(playID).isEmpty }
        #expect(arrived, "\(events().map { $0["id"] ?? "" })")
        let iso = ISO8601DateFormatter()
        for (path, job) in [("recordings", id), ("playbacks", playID)] {
            let status = try await serve.request("GET", "/v1/\(path)/\(job)").json()
            let announced = reconnecting(job)
            // Once per outage: as many events as comebacks the job counts, each id once.
            // Delivery is at least once: counted by id.
            let ids = Set(announced.compactMap { $0["id"] as? String })
            #expect(ids.count == status["reconnects"] as? Int, "\(job): \(ids.sorted()) for \(status["reconnects"] ?? "?") comeback(s)")
            let first = try #require(announced.first)
            #expect(first["id"] as? String == "\(job).reconnecting.0.1" && first["valid"] as? Bool == true, "\(first)")
            let data = try #require(first["data"] as? [String: Any])
            let since = try #require((data["since"] as? String).flatMap(iso.date(from:)), "\(data)")
            // The outage began at the kill, give or take the participant noticing it.
            #expect(since >= killed.addingTimeInterval(-2) && since <= killed.addingTimeInterval(20), "outage start \(since), Janus killed \(killed)")
            #expect((data["reason"] as? String)?.isEmpty == false && data["outage"] as? Int == 1, "\(data)")
            print("serve reconnecting: \(path) \(job): \(announced.count) job.reconnecting, cause \"\(data["reason"] ?? "?")\", "
                  + "start \(String(format: "%+.2f", since.timeIntervalSince(killed))) s from the kill")
        }
        // The restart cost the publisher's media while it lasted: a loss (issue 39), so the
        // recording ends failed, saying so; the playback lost nothing it had to keep.
        let ended = try await serve.request("DELETE", "/v1/recordings/\(id)").json()
        #expect(ended["state"] as? String == "failed", "\(ended)")
        #expect(try await serve.request("DELETE", "/v1/playbacks/\(playID)").json()["state"] as? String == "done")
        #expect(events().allSatisfy { $0["valid"] as? Bool == true })
    }
}
}
