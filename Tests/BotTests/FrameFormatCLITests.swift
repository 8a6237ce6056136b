import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// `sfubot frame`: one frame by hand, as an integrator checks a capture. No Janus.
@Suite struct FrameToolTests {
    let salt = "PQSRTCFrameEncryptionSalt", material = "000102030405060708090a0b0c0d0e0f"

    func frame(_ args: [String]) async throws -> SfubotProcess.Run {
        try await SfubotProcess.run(["frame"] + args)
    }

    @Test func opensWhatItSealedNamingEveryByteAndRefusesAnotherSalt() async throws {
        let plain = "f8aabbccddeeff00112233"
        let sealed = try await frame(["seal", "--frame-format", "framecryptor", "--ratchet-salt", salt, "--key-hex", material, "--hex", plain])
        #expect(sealed.status == 0, "\(sealed.err)")
        let hex = try #require(sealed.out.split(separator: "\n").first { $0.hasPrefix("sealed") }?.split(separator: " ").last.map(String.init))
        #expect(hex.count == 2 * (11 + 16 + 12 + 2) && hex.hasSuffix("0c00"), "TOC ‖ ct ‖ tag ‖ IV ‖ 12 ‖ index 0: \(hex)")
        for field in ["header", "ciphertext", "GCM tag", "IV", "key index"] { #expect(sealed.out.contains(field), "\(sealed.out)") }

        let opened = try await frame(["open", "--frame-format", "framecryptor", "--ratchet-salt", salt, "--key-hex", material, "--hex", hex])
        #expect(opened.status == 0 && opened.out.contains("opened with key index 0") && opened.out.contains("plaintext  \(plain)"), "\(opened.out)\(opened.err)")
        #expect(!opened.out.contains(material) && !opened.err.contains(material), "the key is never printed")

        let wrong = try await frame(["open", "--frame-format", "framecryptor", "--ratchet-salt", "another", "--key-hex", material, "--hex", hex])
        #expect(wrong.status == 65 && wrong.err.contains("does not open this frame (no_key_opens)"), "\(wrong.err)")
    }

    @Test func sframeFrameNamesItsKidAndCounter() async throws {
        let sealed = try await frame(["seal", "--frame-format", "sframe", "--sframe-kid", "5", "--key-hex", material, "--hex", "f8aabbcc"])
        #expect(sealed.status == 0, "\(sealed.err)")
        let hex = try #require(sealed.out.split(separator: "\n").first { $0.hasPrefix("sealed") }?.split(separator: " ").last.map(String.init))
        let opened = try await frame(["open", "--frame-format", "sframe", "--key-hex", material, "--hex", hex])
        #expect(opened.status == 0 && opened.out.contains("opened with key index 5") && opened.out.contains("plaintext  f8aabbcc"), "\(opened.out)\(opened.err)")
        let otherKid = try await frame(["open", "--frame-format", "sframe", "--sframe-kid", "6", "--key-hex", "ff" + material.dropFirst(2), "--hex", hex])
        #expect(otherKid.status == 65, "\(otherKid.out)\(otherKid.err)")
    }

    @Test func refusesWhatItCannotRead() async throws {
        let odd = try await frame(["open", "--frame-format", "framecryptor", "--ratchet-salt", salt, "--key-hex", material, "--hex", "abc"])
        #expect(odd.status == 65 && odd.err.contains("--hex"), "\(odd.err)")
        let short = try await frame(["open", "--frame-format", "framecryptor", "--ratchet-salt", salt, "--key-hex", material, "--hex", "f800"])
        #expect(short.status == 65 && short.err.contains("whatever the key"), "\(short.err)")
        let noSalt = try await frame(["open", "--frame-format", "framecryptor", "--key-hex", material, "--hex", "f800"])
        #expect(noSalt.status == 64 && noSalt.err.contains("--ratchet-salt"), "\(noSalt.err)")
    }
}

/// `play` and `record` in FrameCryptor's format as a user runs them, the recorder's key handed in
/// through `--key-feed` (a FIFO) after the call started, as PQSRTC's host app hands keys in.
extension MediaScene {
@Suite struct FrameFormatCLITests {
    @Test func recordWithAKeyFeedOpensEveryFrameOfAPlayer() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("keyfeed-cli")
        let tone = try await Audio.tone(550, seconds: 4, in: dir)
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let fifo = dir.appendingPathComponent("keys.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let out = dir.appendingPathComponent("rec")
        let format = ["--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt"]
        let keyLog = dir.appendingPathComponent("keys.log")
        let recorder = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-feed", fifo,
                                           "--duration", "8", "--out", out.path, "--key-wait", "10", "--key-log", keyLog.path] + format)
        try await Task.sleep(for: .seconds(1))
        let player = Task { try await CLITests.run(["play", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                    "--display", "5:Alice", tone.path] + format) }
        // Frames before the key wait for it (--key-wait 10: on a loaded machine the player's
        // first frames came more than the default 2 s before the key).
        try await Task.sleep(for: .seconds(1.5))
        // A writer on a thread of its own: opening a FIFO blocks until its reader is there.
        let line = #"{"participant": "5", "index": 0, "key": "\#(key)"}"# + "\n"
        let wrote = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            Thread { c.resume(returning: FileHandle(forWritingAtPath: fifo).map { $0.write(Data(line.utf8)); $0.closeFile(); return true } ?? false) }.start()
        }
        #expect(wrote)
        let played = try await player.value
        #expect(played.status == 0, "\(played.err)")
        let recorded = await recorder.finished()
        #expect(recorded.status == 0, "\(recorded.errText)")
        #expect(!recorded.errText.contains(key) && !recorded.outText.contains(key) && !played.err.contains(key), "keys never in the output")
        #expect(recorded.errText.contains("key 0 of 5 set"), "\(recorded.errText)")

        let manifest = try RecordingManifest.read(from: out)
        #expect(manifest.frameFormat == .framecryptor)
        let feed = try #require(manifest.feeds.first)
        #expect(feed.userID == "5" && feed.frames.received >= 150 && feed.frames.droppedTotal == 0, "\(feed.frames)")
        #expect(feed.openedByKeyIndex == ["0": feed.frames.opened])
        let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 550) <= 11)

        // --key-log: the key handed in mid-call, with whose it is, its index and format; 0600.
        let logged = try KeyLog.material(path: keyLog.path, format: .framecryptor)
        #expect(logged.own == ["5": [0: try KeyMaterial(hex: key)]] && logged.shared.isEmpty)
        #expect(try FileManager.default.attributesOfItem(atPath: keyLog.path)[.posixPermissions] as? Int == 0o600)
    }

    /// `--participant-id display`: a client whose display is its identity, colon and all. The
    /// default rule reads "team" from "team:alice" and finds no key; the rule both ends share opens it.
    @Test func aDisplayIdentityWithAColonIsOneParticipant() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("participant-id")
        let tone = try await Audio.tone(660, seconds: 4, in: dir)
        let key = "0102030405060708090a0b0c0d0e0f10"
        let map = dir.appendingPathComponent("keys.json")
        try Data(#"{"team:alice": {"0": "\#(key)"}}"#.utf8).write(to: map)
        #expect(chmod(map.path, 0o600) == 0)
        let format = ["--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt", "--key-map", map.path]
        func recorder(_ name: String, _ extra: [String]) throws -> (ChildProcess, URL) {
            let out = dir.appendingPathComponent(name)
            return (try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--duration", "7", "--out", out.path] + format + extra), out)
        }
        let (byDisplay, displayOut) = try recorder("display", ["--participant-id", "display"])
        let (byPrefix, prefixOut) = try recorder("prefix", [])
        try await Task.sleep(for: .seconds(1))
        let played = try await CLITests.run(["play", "--janus", Scene.janusURL!, "--room", "\(room)", "--display", "team:alice",
                                             "--participant-id", "display", tone.path] + format)
        #expect(played.status == 0, "\(played.err)")
        _ = await byDisplay.finished()
        _ = await byPrefix.finished()

        let opened = try #require(try RecordingManifest.read(from: displayOut).feeds.first)
        #expect(opened.frames.opened >= 100 && opened.frames.droppedTotal == 0, "\(opened.frames)")
        let samples = try await Audio.decode(displayOut.appendingPathComponent(opened.file))
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 660) <= 13)
        // The default rule names the sender "team", whose keys nobody gave: nothing opened.
        let prefix = try RecordingManifest.read(from: prefixOut)
        #expect(prefix.feeds.allSatisfy { $0.frames.opened == 0 }, "\(prefix.feeds.map(\.frames))")
        #expect(prefix.unrecorded.contains { $0.userID == "team" }, "the sender the default rule reads is named unrecorded")
    }
}
}
