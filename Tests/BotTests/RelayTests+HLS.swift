import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// HLS: a playlist and MPEG-TS segments on this machine's disk, the call decrypted, so the
    /// folder is 0700 and every file 0600; the publisher's own H.264 and the tone in AAC.
    @Test func hlsWritesAPrivatePlaylistOfTheH264AsSentAndTheTone() async throws {
        let dir = try Scene.tempDirectory("relay-hls")
        let source = try await RelayCase.source(in: dir)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let folder = dir.appendingPathComponent("hls")
        let relay = try RelayCase.relay(to: "hls:\(folder.path)", room: room, seconds: 12)
        let ran = await relay.finished()
        publisher.signal(SIGKILL)
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")

        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let segments = names.filter { $0.hasSuffix(".ts") }
        #expect(names.contains("index.m3u8") && segments.count >= 3, "\(names)")
        func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
        #expect(try mode(folder.path) == 0o700)
        for name in names { #expect(try mode(folder.appendingPathComponent(name).path) == 0o600, "\(name)") }

        let playlist = folder.appendingPathComponent("index.m3u8")
        let streams = try await RelayCase.probe(playlist)
        #expect(streams.video?.codec == "h264" && streams.video?.width == 640 && streams.audio?.codec == "aac", "\(streams)")
        let sent = try await RelayCase.parameterSets(source), relayed = try await RelayCase.parameterSets(playlist)
        #expect(!relayed.sps.isEmpty && relayed.sps == sent.sps && relayed.pps == sent.pps, "not re-encoded: the publisher's SPS/PPS")
        let f = try #require(Audio.dominantFrequency(try await RelayCase.audioSamples(playlist)))
        #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")
    }
}
