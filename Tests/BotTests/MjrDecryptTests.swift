import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Mjr
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot mjr decrypt` on recordings Janus itself wrote (`record: true`) of an E2EE
    /// publisher played by the project's player.
    @Suite struct MjrDecryptTests {
        /// Publishes `source` into a new room Janus records into a fresh folder; returns the
        /// `.mjr` files once the player has left (Janus closes them then).
        func janusRecording(_ source: Player.Source, seconds: Double, ring: KeyRing, name: String) async throws -> [URL] {
            try await janusRecording(source, seconds: seconds, protection: .e2ee(ring), name: name)
        }

        func janusRecording(_ source: Player.Source, seconds: Double, protection: FrameProtection, name: String) async throws -> [URL] {
            let recDir = try Scene.tempDirectory("mjr-\(name)")
            let session = try await JanusSession.connect(url: Scene.janusURL!, logger: Scene.logger)
            let handle = try await session.attach(plugin: VideoRoom.plugin)
            var options = VideoRoom.RoomOptions()
            options.record = true
            options.recDir = recDir.path
            let room = try await VideoRoom.createRoom(handle, options: options)
            await session.close()
            _ = try await Player(config: try Scene.config(room: room, display: "7:Mjr", protection: protection),
                                 source: source, duration: .seconds(seconds)).run()
            try await Task.sleep(for: .seconds(1))
            return try FileManager.default.contentsOfDirectory(at: recDir, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "mjr" }.sorted { $0.path < $1.path }
        }

        func decrypt(_ files: [URL], key: CallKey, name: String) async throws -> (MjrManifest, URL) {
            let out = try Scene.tempDirectory("mjr-out-\(name)").appendingPathComponent("dec")
            let manifest = try await MjrDecrypt(files: files.map(\.path), keys: MjrFixedKey(key), directory: out,
                                                library: try PipelineLibrary(), logger: Scene.logger).run()
            return (manifest, out)
        }

        @Test func toneRecordedByJanusDecryptsTo440Hz() async throws {
            let keyHex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let key = try CallKey(hex: keyHex)
            let tone = try await Audio.tone(440, seconds: 4, in: try Scene.tempDirectory("mjr-tone"))
            let files = try await janusRecording(.file(tone.path), seconds: 4, ring: KeyRing(current: key), name: "tone")
            // Janus records the player's data channel too: passed along, as `*.mjr` would, and skipped.
            #expect(files.filter { $0.lastPathComponent.contains("-audio-") }.count == 1 && files.count == 2, "\(files.map(\.lastPathComponent))")

            let (manifest, out) = try await decrypt(files, key: key, name: "tone")
            #expect(manifest.skipped.count == 1 && manifest.skipped[0].contains("-data-"))
            let output = try #require(manifest.outputs.first)
            let track = try #require(output.tracks.first)
            #expect(track.frames.opened >= 180 && track.frames.droppedTotal == 0, "4 s of 20 ms frames: \(track.frames)")
            #expect(!track.truncated && track.sender != nil)
            let file = try #require(output.file)
            #expect(file.hasSuffix(".opus"))

            // Private: the folder 0700, every file 0600 (checked before the decode below adds its own).
            let mode = { (p: String) in (try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? NSNumber)?.intValue ?? -1 }
            #expect(try mode(out.path) == 0o700)
            for f in try FileManager.default.contentsOfDirectory(atPath: out.path) {
                #expect(try mode(out.appendingPathComponent(f).path) == 0o600, "\(f)")
            }

            let samples = try await Audio.decode(out.appendingPathComponent(file))
            #expect(Double(samples.count) / 48000 >= 3.5, "\(samples.count) samples")
            let f = try #require(Audio.dominantFrequency(samples))
            #expect(abs(f - 440) <= 440 * 0.02, "dominant frequency \(f) Hz")

            // The command as a user runs it on the same files: exit 0, one line per output.
            let cliOut = try Scene.tempDirectory("mjr-cli").appendingPathComponent("dec")
            let cli = try await CLITests.run(["mjr", "decrypt"] + files.map(\.path) + ["--key-hex", keyHex, "--out", cliOut.path])
            #expect(cli.status == 0, "\(cli.err)")
            #expect(cli.out.contains("\(file): ") && cli.out.contains("\(track.frames.opened)/\(track.frames.received) opened"), "\(cli.out)")

            // The wrong key: every frame dropped and counted, no media file.
            let (wrong, wrongOut) = try await decrypt(files, key: .random(), name: "tone-wrong")
            let w = try #require(wrong.outputs.first?.tracks.first)
            #expect(w.frames.opened == 0 && w.frames.dropped["no_key_opens"] == track.frames.received)
            #expect(wrong.outputs.first?.file == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: wrongOut.path) == ["manifest.json"])
        }

        /// Speech played into a room Janus records comes back out of the decrypted `.mjr`: the
        /// 20 ms loudness envelopes of the source and the decryption correlate, and another text does not.
        @Test func speechRecordedByJanusMatchesTheSpeechPlayedIn() async throws {
            let key = CallKey.random()
            let dir = try Scene.tempDirectory("mjr-speech")
            let speech = try await Speech.make(dir.appendingPathComponent("speech.wav"))
            let files = try await janusRecording(.file(speech.path), seconds: 25, ring: KeyRing(current: key), name: "speech")
                .filter { $0.lastPathComponent.contains("-audio-") }
            let (manifest, out) = try await decrypt(files, key: key, name: "speech")
            let file = try #require(manifest.outputs.first?.file)
            let decoded = try await Audio.decode(out.appendingPathComponent(file))
            let source = try Speech.samples(speech)
            let match = Speech.envelopeCorrelation(source, decoded)
            #expect(match >= 0.8, "envelope correlation with the speech played in: \(match)")
            let other = try Speech.samples(try await Speech.make(dir.appendingPathComponent("other.wav"), text: Speech.otherText))
            let mismatch = Speech.envelopeCorrelation(other, decoded)
            #expect(mismatch < 0.5, "another text correlates \(mismatch)")
        }

        /// Keys chosen per frame: a key log across rotations picks the key in use at the
        /// frame's time; a key map picks the sender's keys by the Janus user id of the file.
        @Test func keyLogAndKeyMapPickTheKeyOfEachFrame() async throws {
            let key = CallKey.random(), before = CallKey.random(), after = CallKey.random()
            let dir = try Scene.tempDirectory("mjr-keys")
            let tone = try await Audio.tone(440, seconds: 3, in: dir)
            let start = Date().timeIntervalSince1970
            let files = try await janusRecording(.file(tone.path), seconds: 3, ring: KeyRing(current: key), name: "keys")
                .filter { $0.lastPathComponent.contains("-audio-") }
            #expect(files.count == 1)

            // The log: an older key until just before the call, the call's key, a later key
            // from an hour on. Only the call's key opens these frames; the log must pick it.
            let log = dir.appendingPathComponent("keys.log")
            let writer = try KeyLog(path: log.path)
            writer.append(call: 1, key: before, from: start - 7200)
            writer.append(call: 1, key: key, from: start - 1)
            writer.append(call: 1, key: after, from: start + 3600)
            let out = dir.appendingPathComponent("by-log")
            let byLog = try await CLITests.run(["mjr", "decrypt", files[0].path, "--key-log", log.path, "--out", out.path])
            #expect(byLog.status == 0, "\(byLog.err)")
            let track = try firstTrack(out)
            #expect(track.opened >= 130 && track.dropped == 0, "\(track)")
            let sender = try #require(track.sender)

            // The same log with the call's key moved an hour away: the frames' time now points
            // at `before`, and neither neighbour is the call's key: nothing opens.
            let far = dir.appendingPathComponent("far.log")
            let farWriter = try KeyLog(path: far.path)
            farWriter.append(call: 1, key: before, from: start - 7200)
            farWriter.append(call: 1, key: after, from: start + 3600)
            farWriter.append(call: 1, key: key, from: start + 7200)
            let farOut = dir.appendingPathComponent("by-far-log")
            _ = try await CLITests.run(["mjr", "decrypt", files[0].path, "--key-log", far.path, "--out", farOut.path])
            #expect(try firstTrack(farOut).opened == 0)

            // The map: the sender (Janus user id) with an older and its current index opens all;
            // a map that only knows another sender opens nothing.
            func decrypt(map: [String: [String: String]], _ name: String) async throws -> (opened: Int, dropped: Int, sender: String?) {
                let path = dir.appendingPathComponent("\(name).json")
                try JSONSerialization.data(withJSONObject: map).write(to: path)
                chmod(path.path, 0o600)
                let o = dir.appendingPathComponent(name)
                let run = try await CLITests.run(["mjr", "decrypt", files[0].path, "--key-map", path.path, "--out", o.path])
                #expect(run.status == 0 || name == "other", "\(run.err)")
                return try firstTrack(o)
            }
            let mapped = try await decrypt(map: [sender: ["0": before.exportedHex, "1": key.exportedHex]], "map")
            #expect(mapped.opened == track.opened)
            let other = try await decrypt(map: ["\(sender)0": ["0": key.exportedHex]], "other")
            #expect(other.opened == 0 && other.dropped == track.opened)
        }

        /// The first track's counters in DIR/manifest.json, read as a user would (plain JSON).
        func firstTrack(_ dir: URL) throws -> (opened: Int, dropped: Int, sender: String?) {
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("manifest.json"))) as? [String: Any]
            let outputs = try #require(json?["outputs"] as? [[String: Any]])
            let track = try #require((outputs.first?["tracks"] as? [[String: Any]])?.first)
            let frames = try #require(track["frames"] as? [String: Any])
            let dropped = (frames["dropped"] as? [String: Int] ?? [:]).values.reduce(0, +)
            return (frames["opened"] as? Int ?? -1, dropped, track["sender"] as? String)
        }

        @Test func testPatternRecordedByJanusDecryptsToOneMatroska() async throws {
            let key = CallKey.random()
            let files = try await janusRecording(.testPattern, seconds: 6, ring: KeyRing(current: key), name: "pattern")
            #expect(files.filter { !$0.lastPathComponent.contains("-data-") }.count == 2, "\(files.map(\.lastPathComponent))")
            let (manifest, out) = try await decrypt(files, key: key, name: "pattern")
            #expect(manifest.outputs.count == 1, "audio and video of one publisher go into one file")
            let output = try #require(manifest.outputs.first)
            let video = try #require(output.tracks.first { $0.kind == "video" })
            let audio = try #require(output.tracks.first { $0.kind == "audio" })
            #expect(video.frames.opened >= 55 && video.frames.droppedTotal == 0, "6 s at 10 fps: \(video.frames)")
            #expect((video.keyFrames ?? 0) >= 3 && video.beforeFirstKeyframe == 0)
            #expect(audio.frames.opened >= 280 && audio.frames.droppedTotal == 0, "\(audio.frames)")
            let file = out.appendingPathComponent(try #require(output.file))
            let info = try MediaInfo.discover(file.path)
            #expect(info.videoCaps?.hasPrefix("video/x-h264") == true && info.audioCaps?.hasPrefix("audio/x-opus") == true)
            #expect(abs(info.duration - 6) < 1, "\(info.duration) s")

            // Decodes to the pattern: as many pictures as were kept, black and white halves of every second.
            let luma = try await Audio.videoLuma(file)
            #expect(abs(luma.count - video.frames.opened) <= 2, "\(luma.count) pictures decoded of \(video.frames.opened)")
            #expect(luma.filter { $0 > 200 }.count >= 15 && luma.filter { $0 < 40 }.count >= 15, "flashes: \(luma.map { Int($0) })")

            // Aligned by the files' first-packet times: the tick starts with the flash, as sent.
            let offsets = try await AVSync.tickMinusFlash(file)
            #expect(offsets.count >= 4, "\(offsets.count) flashes found")
            #expect(offsets.allSatisfy { abs($0) <= 0.060 }, "tick − flash: \(offsets.map { Int($0 * 1000) }) ms")

            // A copy cut in the middle (Janus killed mid-write): the frames before the cut.
            let videoFile = try #require(files.first { $0.lastPathComponent.contains("-video-") })
            let data = try Data(contentsOf: videoFile)
            let cutDir = try Scene.tempDirectory("mjr-cut")
            let cut = cutDir.appendingPathComponent(videoFile.lastPathComponent)
            try data.prefix(data.count / 2 + 7).write(to: cut)
            let (cutManifest, cutOut) = try await decrypt([cut], key: key, name: "cut")
            let c = try #require(cutManifest.outputs.first?.tracks.first)
            #expect(c.truncated)
            #expect(c.frames.opened >= video.frames.opened / 3 && c.frames.opened <= video.frames.opened * 2 / 3 + 2, "\(c.frames.opened) of \(video.frames.opened)")
            let cutLuma = try await Audio.videoLuma(cutOut.appendingPathComponent(try #require(cutManifest.outputs.first?.file)))
            #expect(abs(cutLuma.count - c.frames.opened) <= 2)

            // The wrong key: nothing decodable written.
            let (wrong, wrongOut) = try await decrypt(files, key: .random(), name: "pattern-wrong")
            #expect(wrong.outputs.allSatisfy { $0.file == nil && $0.tracks.allSatisfy { $0.frames.opened == 0 && $0.frames.droppedTotal > 0 } })
            #expect(try FileManager.default.contentsOfDirectory(atPath: wrongOut.path) == ["manifest.json"])
        }

        /// A copy of `file` with packet `index`'s RTP header changed by `damage` (bytes 2…7: sequence
        /// number and timestamp).
        func damaged(_ file: URL, packet index: Int, _ damage: (inout [UInt8], Int) -> Void, name: String) throws -> URL {
            let parsed = try MjrFile(path: file.path)
            var bytes = [UInt8](try Data(contentsOf: file))
            damage(&bytes, parsed.packets[index].range.lowerBound)
            let out = file.deletingLastPathComponent().appendingPathComponent("\(name)-" + file.lastPathComponent)
            try Data(bytes).write(to: out)
            return out
        }

        @Test("one packet with a wrong sequence number or timestamp costs that packet only; the output holds what the manifest says")
        func oneDamagedPacketCostsOnlyItself() async throws {
            let key = CallKey.random()
            let tone = try await Audio.tone(440, seconds: 8, in: try Scene.tempDirectory("mjr-damage"))
            let files = try await janusRecording(.file(tone.path), seconds: 8, ring: KeyRing(current: key), name: "damage")
            let audio = try #require(files.first { $0.lastPathComponent.contains("-audio-") })
            let total = try MjrFile(path: audio.path).packets.count
            let damages: [(String, (inout [UInt8], Int) -> Void)] = [
                ("seq", { b, at in b[at + 2] ^= 0x80 }),            // sequence number off by 0x8000
                ("ts", { b, at in b[at + 4] ^= 0x40 }),             // timestamp off by 2^30
            ]
            for (name, damage) in damages {
                let file = try damaged(audio, packet: 57, damage, name: name)
                let (manifest, out) = try await decrypt([file], key: key, name: "damage-\(name)")
                let output = try #require(manifest.outputs.first)
                let track = try #require(output.tracks.first)
                #expect(output.partial == nil && output.error == nil, "\(name): \(output.partial ?? output.error ?? "")")
                #expect(track.outOfLinePackets == 1 && track.frames.opened == total - 1, "\(name): \(track.outOfLinePackets) out of line, \(track.frames.opened) of \(total) opened")
                #expect(track.onDisk?.frames == track.written && track.written == track.frames.opened, "\(name): \(String(describing: track.onDisk)) written \(track.written ?? -1)")
                let seconds = Double(try await Audio.decode(out.appendingPathComponent(try #require(output.file))).count) / 48000
                print("mjr damage \(name): \(track.frames.opened) of \(total) frames opened, \(seconds) s decoded")
                #expect(seconds >= 7.5 && seconds < 8.6, "\(name): \(seconds) s decoded of about 8")
            }
        }

        @Test func garbageEmptyAndFolderAreOneLineErrors() async throws {
            let dir = try Scene.tempDirectory("mjr-bad")
            let empty = dir.appendingPathComponent("empty.mjr"), garbage = dir.appendingPathComponent("garbage.mjr")
            try Data().write(to: empty)
            try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: garbage)
            let loop = dir.appendingPathComponent("loop.mjr"), other = dir.appendingPathComponent("loop2.mjr")
            try FileManager.default.createSymbolicLink(atPath: loop.path, withDestinationPath: other.path)
            try FileManager.default.createSymbolicLink(atPath: other.path, withDestinationPath: loop.path)
            for (input, words) in [(empty.path, "is empty"), (garbage.path, "not a Janus recording"), (dir.path, "is a folder"),
                                   (dir.appendingPathComponent("missing.mjr").path, "no such file"),
                                   ("/dev/zero", "not a regular file (a character device)"), (loop.path, "a loop of symbolic links")] {
                let out = dir.appendingPathComponent("out-\(UUID().uuidString.prefix(4))")
                do {
                    _ = try await MjrDecrypt(files: [input], keys: MjrFixedKey(.random()), directory: out,
                                             library: try PipelineLibrary(), logger: Scene.logger).run()
                    Issue.record("\(input) was accepted")
                } catch let e as MjrError {
                    #expect(e.description.contains(words) && !e.description.contains("\n"), "\(e)")
                }
                #expect(!FileManager.default.fileExists(atPath: out.path), "nothing written for bad input")
            }
            // The command: one line on stderr naming the file, exit 66 (EX_NOINPUT), not a pipeline error (70).
            let key = String(repeating: "ab", count: 32)
            for input in [empty.path, garbage.path, dir.path, "/dev/zero", loop.path] {
                let r = try await CLITests.run(["mjr", "decrypt", input, "--key-hex", key, "--out", dir.appendingPathComponent("cli").path])
                #expect(r.status == 66 && r.err.hasPrefix("sfubot: ") && r.err.contains(input) && r.err.split(separator: "\n").count == 1, "\(r.status) \(r.err)")
            }
            let badKey = try await CLITests.run(["mjr", "decrypt", garbage.path, "--key-hex", "abc", "--out", dir.appendingPathComponent("cli").path])
            #expect(badKey.status == 65, "\(badKey.err)")
        }
    }
}
