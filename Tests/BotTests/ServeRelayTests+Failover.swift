import Foundation
import Testing
import TestSupport

extension MediaScene.ServeRelayTests {
    /// A relay job fails over (issue 43 item 6): two instances on one PostgreSQL, the owner
    /// SIGKILLed mid-stream; the other takes the job and sends the stream again, read back from
    /// nginx with the publisher's H.264 and the tone. The time from the kill to the new stream
    /// is printed.
    @Test("a relay job's owner SIGKILLed: the other instance takes it and nginx gets the participant's H.264 and the tone again; DELETE ends it done")
    func relayJobFailsOver() async throws {
        let dir = try Scene.tempDirectory("serve-relay-failover")
        let source = try await RelayCase.source(in: dir, seconds: 40)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        defer { publisher.signal(SIGKILL) }
        let pg = try await LocalPostgres.start(port: 15447)
        let allow = "rtmp://127.0.0.1:\(port)/live"
        func serve(_ name: String, api: Int, token: String? = nil) async throws -> ServeProcess {
            try await ServeProcess.start(port: api, in: dir, stateDir: dir.appendingPathComponent("state-\(name)"), token: token, extra: [
                "--database", pg.url(), "--instance-id", name, "--relay-allow", allow,
            ])
        }
        let a = try await serve("a", api: 18666)
        defer { a.process.signal(SIGKILL) }
        let b = try await serve("b", api: 18667, token: a.token)
        defer { b.process.signal(SIGKILL) }
        let to = "rtmp://127.0.0.1:\(port)/live/failover"
        let created = try await a.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "participant": "7", "to": to])
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")
        let sending = try await a.waitFor("/v1/relays/\(id)", within: .seconds(40)) { $0["relayPhase"] as? String == "sending" && $0["owner"] != nil }
        let first = try #require(sending["owner"] as? String)
        let (owner, other) = first == "a" ? (a, b) : (b, a)
        #expect(await RelayCase.readBack(to, seconds: 3, to: dir.appendingPathComponent("before.flv")), "the stream before the kill")

        let killed = Date()
        owner.process.signal(SIGKILL)
        _ = try await other.waitFor("/v1/relays/\(id)", within: .seconds(40)) { s in
            s["owner"] as? String != first && s["owner"] != nil && s["relayPhase"] as? String == "sending"
        }
        let taken = Date().timeIntervalSince(killed)
        let got = dir.appendingPathComponent("after.flv")
        let read = await RelayCase.readBack(to, seconds: 5, to: got)
        let final = try await other.request("DELETE", "/v1/relays/\(id)").json()
        await nginx.stop()
        await pg.stop()
        #expect(read, "nothing came back from nginx after the failover")
        #expect(final["state"] as? String == "done" && final["resumes"] as? Int == 1, "\(final)")
        let streams = try await RelayCase.probe(got)
        #expect(streams.video?.codec == "h264" && streams.audio?.codec == "aac", "\(streams)")
        let sent = try await RelayCase.parameterSets(source), relayed = try await RelayCase.parameterSets(got)
        #expect(!relayed.sps.isEmpty && relayed.sps == sent.sps, "the publisher's own H.264 after the failover")
        let f = try #require(Audio.dominantFrequency(try await RelayCase.audioSamples(got)))
        #expect(abs(f - 440) <= 9, "the tone after the failover: \(f) Hz")
        print(String(format: "serve relay failover: the owner %@ SIGKILLed, the job sending again on the other %.1f s later", first, taken))
    }
}
