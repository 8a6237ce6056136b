import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// Per-sender keys (`--key-map`) in real rooms on the real Janus: each sender seals with its
/// own key; a recorder opens each feed with that sender's keys only.
extension MediaScene {
@Suite struct PerSenderKeyTests {
    let tones: [(id: String, hz: Double)] = [("1", 440), ("2", 660), ("3", 1000)]

    /// Three senders, three keys: sender 1 seals with its newest of two indexes, sender 2 with
    /// its only one, sender 3 with the older of its two (the recorder tries newest first and
    /// counts which index opened).
    @Test func recorderWithTheMapOpensEverySenderWithItsOwnKey() async throws {
        let dir = try Scene.tempDirectory("persender")
        let k1old = CallKey.random(), k1 = CallKey.random(), k2 = CallKey.random(), k3old = CallKey.random(), k3 = CallKey.random()
        let map = KeyMap(senders: ["1": [1: k1old, 2: k1], "2": [5: k2], "3": [1: k3old, 2: k3]])
        let sealing: [String: (CallKey, String)] = ["1": (k1, "2"), "2": (k2, "5"), "3": (k3old, "1")]
        var players: [(URL, String, FrameProtection)] = []
        for t in tones {
            players.append((try await Audio.tone(t.hz, seconds: 6, in: dir), "\(t.id):Sender \(t.id)", .e2ee(KeyRing(current: sealing[t.id]!.0))))
        }
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await RecordPlayTests().session(
            room: try await Scene.createRoom(), players: players, recorders: [(out, .perSender(map))])

        let manifest = manifests[0]
        #expect(manifest.e2ee)
        #expect(Set(manifest.feeds.map(\.userID)) == ["1", "2", "3"])
        for feed in manifest.feeds {
            let hz = try #require(tones.first { $0.id == feed.userID }?.hz)
            #expect(feed.frames.received >= 250, "\(feed.userID): \(feed.frames)")
            #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received, "\(feed.userID): \(feed.frames)")
            #expect(feed.openedByKeyIndex == [sealing[feed.userID]!.1: feed.frames.opened], "\(feed.userID): \(String(describing: feed.openedByKeyIndex))")
            let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
            #expect(Double(samples.count) / 48000 >= 0.8 * 6, "\(feed.file): \(Double(samples.count) / 48000) s")
            let f = try #require(Audio.dominantFrequency(samples))
            #expect(abs(f - hz) <= hz * 0.02, "\(feed.file): \(f) Hz, expected \(hz)")
        }
        // The manifest on disk carries the counts too.
        let onDisk = try RecordingManifest.read(from: out)
        #expect(onDisk.feeds.allSatisfy { $0.openedByKeyIndex?.values.reduce(0, +) ?? 0 > 0 })
    }

    /// A recorder that holds only sender 1's key: sender 1 recorded; the others' frames are all
    /// dropped and counted, nothing decodable written for them.
    @Test func recorderWithOneSendersKeyOpensOnlyThatSender() async throws {
        let dir = try Scene.tempDirectory("onesender")
        let keys = Dictionary(uniqueKeysWithValues: tones.map { ($0.id, CallKey.random()) })
        var players: [(URL, String, FrameProtection)] = []
        for t in tones {
            players.append((try await Audio.tone(t.hz, seconds: 5, in: dir), "\(t.id):Sender \(t.id)", .e2ee(KeyRing(current: keys[t.id]!))))
        }
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await RecordPlayTests().session(
            room: try await Scene.createRoom(), players: players, recorders: [(out, .perSender(KeyMap(senders: ["1": [0: keys["1"]!]])))])

        // The senders whose key the recorder lacks have no file: listed as unrecorded.
        #expect(manifests[0].feeds.map(\.userID) == ["1"] && Set(manifests[0].unrecorded.map(\.userID)) == ["2", "3"])
        let feeds = manifests[0].feeds + manifests[0].unrecorded
        #expect(Set(feeds.map(\.userID)) == ["1", "2", "3"])
        for feed in feeds {
            #expect(feed.frames.received > 100, "\(feed.userID): \(feed.frames)")
            let samples = (try? await Audio.decode(out.appendingPathComponent(feed.file))) ?? []
            if feed.userID == "1" {
                #expect(feed.frames.droppedTotal == 0 && feed.openedByKeyIndex == ["0": feed.frames.opened])
                #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
            } else {
                #expect(feed.frames.opened == 0)
                #expect(feed.frames.dropped["no_key_opens"] == feed.frames.received, "\(feed.userID): \(feed.frames)")
                #expect(feed.openedByKeyIndex == [:], "no index of theirs: \(String(describing: feed.openedByKeyIndex))")
                #expect(samples.isEmpty && !FileManager.default.fileExists(atPath: out.appendingPathComponent(feed.file).path),
                        "no file for \(feed.userID)")
            }
        }
    }
}
}
