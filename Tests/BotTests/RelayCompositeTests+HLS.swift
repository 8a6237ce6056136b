import Foundation
import Testing
import TestSupport

extension MediaScene.RelayCompositeTests {
    /// `--to hls:DIR` without `--participant`: the composite written as an HLS playlist and
    /// MPEG-TS segments, read back from the playlist: one H.264 picture at `--size`, Ann's red
    /// tile beside Bob's blue, both tones in AAC; the call decrypted on disk, so the folder is
    /// 0700 and every file 0600.
    @Test("HLS composite: the playlist holds 960x540 H.264 with Ann's and Bob's tiles side by side and both tones; folder 0700, files 0600")
    func hlsCompositeIsAPrivatePlaylistOfTheGridAndBothTones() async throws {
        let dir = try Scene.tempDirectory("relay-composite-hls")
        let ann = try await CompositeCase.publisherFile("red", tone: 440, seconds: 16, in: dir)
        let bob = try await CompositeCase.publisherFile("blue", tone: 660, seconds: 16, in: dir)
        let room = try await Scene.createRoom()
        let folder = dir.appendingPathComponent("hls")
        let relay = try CompositeCase.relay(to: "hls:\(folder.path)", room: room, seconds: 15, ["--size", "960x540"])
        try await Task.sleep(for: .seconds(1))
        let players = [try CompositeCase.play(ann, as: "7:Ann", room: room), try CompositeCase.play(bob, as: "8:Bob", room: room)]
        let ran = await relay.finished()
        for p in players { p.signal(SIGKILL) }
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
        #expect(ran.outText.contains("composed 2 participant(s)"), "\(ran.outText)")

        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let segments = names.filter { $0.hasSuffix(".ts") }
        #expect(names.contains("index.m3u8") && segments.count >= 4, "\(names)")
        func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
        #expect(try mode(folder.path) == 0o700)
        for name in names { #expect(try mode(folder.appendingPathComponent(name).path) == 0o600, "\(name)") }

        let playlist = folder.appendingPathComponent("index.m3u8")
        let streams = try await RelayCase.probe(playlist)
        let video = try #require(streams.video, "no video in the playlist")
        #expect(video.codec == "h264" && video.width == 960 && video.height == 540, "\(video)")
        #expect(streams.audio?.codec == "aac" && streams.audio?.rate == 48000, "\(String(describing: streams.audio))")
        // The playlist's segments decode as one run of 960x540 pictures at about 25 fps.
        let runs = try await Pictures.runs(playlist)
        #expect(runs.count == 1 && runs.first.map { $0.width == 960 && $0.height == 540 && $0.count >= 8 * 22 } == true, "\(runs)")

        let pictures = try await CompositeCase.pictures(playlist)
        // The tiles go in the order the two joined, which is a race here: either side.
        let both = pictures.filter { Set([$0.left, $0.right]) == [.red, .blue] }
        #expect(both.count >= 10, "pictures with Ann's and Bob's tiles side by side: \(both.count) of \(pictures.count): \(pictures.map { "\($0.left)/\($0.right)" })")
        let tones = CompositeCase.tones(try await RelayCase.audioSamples(playlist), [440, 660])
        #expect(tones.filter { $0 == [440, 660] }.count >= 5, "seconds with both tones: \(tones)")
    }
}
