import Bot
import FrameCrypto
import Foundation
import Mjr
import Testing
import TestSupport

/// The formats whose frames name their key (FrameCryptor as PQSRTC configures it, SFrame) in
/// real rooms on the real Janus: per-participant sender keys, a rotation, a ratchet, a key
/// handed in after the first frames, a wrong salt; every frame counted where it arrives.
extension MediaScene {
@Suite struct FrameFormatTests {
    static let options = FrameCryptorOptions.pqsrtc

    static func store(_ options: FrameCryptorOptions = options) -> FrameKeyStore<FrameCryptorFormat> {
        FrameKeyStore(format: FrameCryptorFormat(options: options))
    }

    static func material() -> KeyMaterial { try! KeyMaterial((0..<32).map { _ in UInt8.random(in: 0...255) }) }

    /// Three participants, each sealing with its own key: 2 rotates from index 0 to index 1
    /// mid-call, 3 ratchets its key mid-call (the recorder holds only its first material and
    /// follows within the ratchet window). Every frame received opens; each tone decodes.
    @Test func threeSendersOneRotatingOneRatchetingLoseNothing() async throws {
        let dir = try Scene.tempDirectory("framecryptor3")
        let tones: [(id: String, hz: Double)] = [("1", 440), ("2", 660), ("3", 1000)]
        let k1 = Self.material(), k2a = Self.material(), k2b = Self.material(), k3 = Self.material()
        let recorderKeys = Self.store()
        for (id, index, k) in [("1", 0, k1), ("2", 0, k2a), ("2", 1, k2b), ("3", 0, k3)] as [(String, UInt64, KeyMaterial)] {
            try recorderKeys.set(participant: id, index: index, material: k)
        }
        var senders: [String: (FrameKeyStore<FrameCryptorFormat>, IndexedProtection)] = [:]
        for (id, keys) in [("1", [(0, k1)]), ("2", [(0, k2a), (1, k2b)]), ("3", [(0, k3)])] as [(String, [(UInt64, KeyMaterial)])] {
            let s = Self.store()
            for (index, k) in keys { try s.set(participant: id, index: index, material: k) }
            senders[id] = (s, IndexedProtection(store: s, sender: id))
        }
        var players: [(URL, String, FrameProtection)] = []
        for t in tones { players.append((try await Audio.tone(t.hz, seconds: 8, in: dir), "\(t.id):Sender \(t.id)", .indexed(senders[t.id]!.1))) }
        // Mid-call (the recorder starts 1 s before the players): 2 moves to index 1, 3 ratchets.
        let midCall = Task {
            try await Task.sleep(for: .seconds(5))
            senders["2"]!.1.sealing.set(1)
            try senders["3"]!.0.ratchet(participant: "3", index: 0)
        }
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await RecordPlayTests().session(
            room: try await Scene.createRoom(), players: players,
            recorders: [(out, .indexed(IndexedProtection(store: recorderKeys, sender: "")))])
        try await midCall.value

        let manifest = manifests[0]
        #expect(manifest.frameFormat == .framecryptor)
        #expect(Set(manifest.feeds.map(\.userID)) == ["1", "2", "3"] && manifest.unrecorded.isEmpty)
        for feed in manifest.feeds {
            let hz = try #require(tones.first { $0.id == feed.userID }?.hz)
            #expect(feed.frames.received >= 300, "\(feed.userID): \(feed.frames)")
            #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received, "\(feed.userID): \(feed.frames)")
            let byIndex = feed.openedByKeyIndex ?? [:]
            if feed.userID == "2" {
                #expect((byIndex["0"] ?? 0) > 50 && (byIndex["1"] ?? 0) > 50, "rotated: \(byIndex)")
            } else {
                #expect(byIndex == ["0": feed.frames.opened], "\(feed.userID): \(byIndex)")
            }
            let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
            #expect(Double(samples.count) / 48000 >= 0.8 * 8, "\(feed.file): \(Double(samples.count) / 48000) s")
            let f = try #require(Audio.dominantFrequency(samples))
            #expect(abs(f - hz) <= hz * 0.02, "\(feed.file): \(f) Hz, expected \(hz)")
        }
        // The recorder followed 3's ratchet: its key at index 0 is no longer the first material.
        #expect(recorderKeys.summary.participants["3"] == [0])
    }

    /// The host app hands the recorder a participant's key only after that participant's first
    /// frames arrived: they wait (up to --key-wait) and open; none is lost.
    @Test func keyHandedInAfterTheFirstFramesLosesNothing() async throws {
        let dir = try Scene.tempDirectory("latekey")
        let k = Self.material()
        let sender = Self.store()
        try sender.set(participant: "5", index: 0, material: k)
        let recorderKeys = Self.store()
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        // A wait longer than the default 2 s: the key is handed in 3.5 s after the player starts,
        // and a loaded machine may oversleep that.
        let recorder = Recorder(config: try Scene.config(room: room, display: "90:Rec",
                                                         protection: .indexed(IndexedProtection(store: recorderKeys, sender: "", keyWait: .seconds(8)))),
                                directory: out)
        let recording = Task { try await recorder.run() }
        try await Task.sleep(for: .seconds(1))
        let tone = try await Audio.tone(880, seconds: 6, in: dir)
        let player = Task { try await Player(config: try Scene.config(room: room, display: "5:Late", protection: .indexed(IndexedProtection(store: sender, sender: "5"))), file: tone.path).run() }
        // Past the player's ICE and DTLS (about 0.3–1 s here) and the first packets' wait for
        // lip sync (the direct receive path: about 1 s, 2 s at most), inside the key wait.
        try await Task.sleep(for: .seconds(3.5))
        let handedIn = Date()
        try recorderKeys.set(participant: "5", index: 0, material: k)
        _ = try await player.value
        try await Task.sleep(for: .seconds(1.5))
        recording.cancel()
        let manifest = try await recording.value

        let feed = try #require(manifest.feeds.first)
        let first = try #require(feed.firstFrame)
        #expect(first < handedIn, "frames arrived before the key: \(first) vs \(handedIn)")
        #expect(feed.frames.received >= 250 && feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received, "\(feed.frames)")
        let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 880) <= 18)
    }

    /// A recorder whose salt differs from the call's derives other keys: nothing decodable is
    /// written, every frame is counted as no key opening it, and the participant is unrecorded.
    @Test func wrongSaltWritesNothingAndSaysSo() async throws {
        let dir = try Scene.tempDirectory("wrongsalt")
        let k = Self.material()
        let sender = Self.store()
        try sender.set(participant: "6", index: 0, material: k)
        let recorderKeys = Self.store(FrameCryptorOptions(ratchetSalt: Array("another salt".utf8), ratchetWindow: 2))
        try recorderKeys.set(participant: nil, index: 0, material: k)
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await RecordPlayTests().session(
            room: try await Scene.createRoom(),
            players: [(try await Audio.tone(440, seconds: 4, in: dir), "6:Salty", .indexed(IndexedProtection(store: sender, sender: "6")))],
            recorders: [(out, .indexed(IndexedProtection(store: recorderKeys, sender: "")))])
        let m = manifests[0]
        #expect(m.feeds.isEmpty && m.unrecorded.map(\.userID) == ["6"])
        let feed = try #require(m.unrecorded.first)
        #expect(feed.frames.received > 100 && feed.frames.opened == 0 && feed.frames.dropped["no_key_opens"] == feed.frames.received, "\(feed.frames)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(feed.file).path))
    }

    /// SFrame (RFC 9605, AES_128_GCM_SHA256_128): a shared base key under KID 7, the whole Opus
    /// frame sealed; recorded decrypted, each frame opened by KID 7.
    @Test func sframeAudioIsRecordedDecrypted() async throws {
        let dir = try Scene.tempDirectory("sframe")
        let k = Self.material()
        func store() throws -> FrameKeyStore<SFrameFormat> {
            let s = FrameKeyStore(format: SFrameFormat())
            try s.set(participant: nil, index: 7, material: k)
            return s
        }
        let out = dir.appendingPathComponent("rec")
        let (reports, manifests) = try await RecordPlayTests().session(
            room: try await Scene.createRoom(),
            players: [(try await Audio.tone(660, seconds: 5, in: dir), "8:SFrame", .indexed(IndexedProtection(store: try store(), sender: "8", sealingIndex: 7)))],
            recorders: [(out, .indexed(IndexedProtection(store: try store(), sender: "")))])
        let feed = try #require(manifests[0].feeds.first)
        #expect(manifests[0].frameFormat == .sframe)
        #expect(reports[0].framesSent >= 240)
        #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received && feed.openedByKeyIndex == ["7": feed.frames.opened], "\(feed.frames)")
        let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 660) <= 13)
    }
}
}

extension MediaScene.FrameFormatTests {
    /// FrameCryptor video: the test pattern sealed as PQSRTC seals H.264 (SPS and PPS inside the
    /// keyframe's authenticated header, the rest escaped), recorded decrypted; the file decodes to
    /// the pattern's flashes, and every keyframe opened.
    @Test func frameCryptorVideoIsRecordedDecrypted() async throws {
        let k = Self.material()
        func keys() throws -> FrameProtection {
            let s = Self.store()
            try s.set(participant: nil, index: 0, material: k)
            return .indexed(IndexedProtection(store: s, sender: "3"))
        }
        let (manifest, out, report) = try await MediaScene.VideoTests().record(player: try keys(), recorder: try keys(), seconds: 6)
        #expect(report.videoFramesSent >= 55, "6 s at 10 fps")
        let video = try #require(manifest.feeds.first { $0.kind == "video" })
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" })
        #expect(video.frames.opened > 30 && video.frames.droppedTotal == 0, "\(video.frames)")
        #expect(audio.frames.opened > 200 && audio.frames.droppedTotal == 0, "\(audio.frames)")
        #expect((video.keyFrames ?? 0) >= 2 && video.width == 640 && video.height == 360, "\(String(describing: video.keyFrames))")
        let luma = try await Audio.videoLuma(out.appendingPathComponent(video.file))
        #expect(luma.count >= 30, "\(luma.count) frames decoded")
        #expect(luma.filter { $0 > 200 }.count >= 10 && luma.filter { $0 < 40 }.count >= 10, "flashes: \(luma.map { Int($0) })")
    }
}

extension MediaScene.FrameFormatTests {
    /// Janus's own recording (.mjr) of a FrameCryptor publisher, decrypted offline as `mjr
    /// decrypt --frame-format framecryptor` does: each frame opened by the key its index names.
    @Test func janusRecordingOfFrameCryptorDecrypts() async throws {
        let k = Self.material()
        let sender = Self.store()
        try sender.set(participant: nil, index: 0, material: k)
        let files = try await MediaScene.MjrDecryptTests().janusRecording(
            .testPattern, seconds: 5, protection: .indexed(IndexedProtection(store: sender, sender: "7")), name: "framecryptor")
        let keys = Self.store()
        try keys.set(participant: nil, index: 0, material: k)
        let out = try Scene.tempDirectory("mjr-fc").appendingPathComponent("dec")
        let manifest = try await MjrDecrypt(files: files.map(\.path), keys: MjrIndexedKeys(keys), directory: out,
                                            library: try PipelineLibrary(), logger: Scene.logger).run()
        let output = try #require(manifest.outputs.first)
        let video = try #require(output.tracks.first { $0.kind == "video" })
        let audio = try #require(output.tracks.first { $0.kind == "audio" })
        #expect(video.frames.opened >= 45 && video.frames.droppedTotal == 0 && (video.keyFrames ?? 0) >= 2, "\(video.frames)")
        #expect(audio.frames.opened >= 230 && audio.frames.droppedTotal == 0, "\(audio.frames)")
        let luma = try await Audio.videoLuma(out.appendingPathComponent(try #require(output.file)))
        #expect(luma.filter { $0 > 200 }.count >= 10 && luma.filter { $0 < 40 }.count >= 10, "flashes: \(luma.map { Int($0) })")

        // The same files through `sfubot mjr decrypt --key-log`, the key in a log as `record
        // --key-log` writes it (beside an ECall line, which a FrameCryptor reader must skip).
        let logPath = out.deletingLastPathComponent().appendingPathComponent("keys.log").path
        let log = try KeyLog(path: logPath)
        log.append(call: 1, key: CallKey.random(), from: 0)
        log.append(call: 1, format: .framecryptor, material: k, index: 0, participant: nil, from: 0)
        let cliOut = out.deletingLastPathComponent().appendingPathComponent("cli")
        let cli = try await SfubotProcess.run(["mjr", "decrypt", "--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt",
                                               "--key-log", logPath, "--out", cliOut.path] + files.map(\.path))
        #expect(cli.status == 0, "\(cli.err)")
        let byCLI = try #require(try MjrManifest.read(from: cliOut).outputs.first)
        #expect(byCLI.tracks.map(\.frames.opened) == output.tracks.map(\.frames.opened) && byCLI.tracks.allSatisfy { $0.frames.droppedTotal == 0 },
                "\(byCLI.tracks.map(\.frames))")
    }
}
