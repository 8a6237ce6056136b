import Bot
import Foundation
import Testing
import TestSupport

/// A/V recordings under `sfubot serve` ended the ways an operator ends them: DELETE, and
/// SIGTERM to the service. On a8caa6a both left a 0-byte .mkv and a `done` job.
extension MediaScene {
@Suite struct ServeEndingsTests {
    enum Ending: String, CaseIterable, Sendable { case delete, sigterm }
    let key = String(repeating: "3c", count: 32)

    @Test("an A/V recording stopped by DELETE or by SIGTERM to serve is one file holding every frame written",
          arguments: Ending.allCases)
    func avRecordingSurvivesTheStop(_ ending: Ending) async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-end-\(ending.rawValue)")
        let serve = try await ServeProcess.start(port: ending == .delete ? 18491 : 18492, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let player = try SfubotProcess.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)",
                                                    "--key-hex", key, "--display", "6:Pat", "--duration", "40"])
        defer { player.signal(SIGKILL) }
        let out = serve.stateDir.appendingPathComponent("recordings/av")
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        #expect(rec.status == 201, "\(rec.text)")
        let id = try #require(try rec.json()["id"] as? String)
        // Until the recorder has about 6 s of the player's video.
        _ = try await serve.waitFor("/v1/recordings/\(id)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { $0["kind"] as? String == "video" && ($0["framesOpened"] as? Int ?? 0) > 60 }
        }
        switch ending {
        case .delete:
            let stopped = try await serve.request("DELETE", "/v1/recordings/\(id)")
            #expect(try stopped.json()["state"] as? String == "done", "\(stopped.text)")
        case .sigterm:
            serve.process.signal(SIGTERM)
            #expect(await serve.process.exit(within: .seconds(40)) == 0)
        }
        let manifest = try RecordingManifest.read(from: out)
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        let feeds = manifest.feeds.filter { $0.userID == "6" }
        let video = try #require(feeds.first { $0.kind == "video" })
        #expect(feeds.count == 2 && feeds.allSatisfy { $0.file == video.file && $0.file.hasSuffix("-6.mkv") }, "\(feeds.map(\.file))")
        for feed in feeds { #expect(feed.onDisk?.frames == feed.written && feed.onDisk?.frames ?? 0 > 0, "\(feed.kind): \(String(describing: feed.onDisk)) \(feed.written ?? -1)") }
        let file = out.appendingPathComponent(video.file)
        let pictures = try await Audio.videoLuma(file).count
        #expect(pictures == video.written && pictures >= 55, "\(pictures) pictures decoded, \(video.written ?? -1) written")
        #expect(Double(try await Audio.decode(file).count) / 48000 >= 5)
    }
}
}
