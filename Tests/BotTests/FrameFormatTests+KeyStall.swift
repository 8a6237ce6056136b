import Bot
import FrameCrypto
import Foundation
import Locking
import Synchronization
import Testing
import TestSupport

extension MediaScene.FrameFormatTests {
    /// One recorder, two publishers: B's key is handed in 1 s after B's first frame reached the
    /// recorder. B's frames are held meanwhile, not waited for on the streaming thread (on the
    /// direct receive path the PeerConnection's only one, so a wait there stalled every feed):
    /// A's frames keep being opened through that second, and B's open in order once the key is in.
    @Test func aFeedWaitingForItsKeyDoesNotStallTheOthers() async throws {
        let dir = try Scene.tempDirectory("keystall")
        let ka = Self.material(), kb = Self.material()
        let senderA = Self.store(), senderB = Self.store(), recorderKeys = Self.store()
        try senderA.set(participant: "7", index: 0, material: ka)
        try senderB.set(participant: "8", index: 0, material: kb)
        try recorderKeys.set(participant: "7", index: 0, material: ka)
        let room = try await Scene.createRoom()
        // When each feed's frames reach the opener and leave it opened (seconds, monotonic).
        let arrived = Locked<[Int64: [Double]]>([:]), opened = Locked<[Int64: [Double]]>([:])
        let tap: FrameTap = { point, feed, _ in
            let now = ProcessInfo.processInfo.systemUptime
            if point == .beforeOpen { arrived.withLock { $0[feed, default: []].append(now) } }
            if point == .afterOpen { opened.withLock { $0[feed, default: []].append(now) } }
        }
        let out = dir.appendingPathComponent("rec")
        // A wait longer than the default 2 s: a loaded machine may oversleep the 1 s below.
        let recorderProtection = FrameProtection.indexed(IndexedProtection(store: recorderKeys, sender: "", keyWait: .seconds(5)))
        let recorder = Recorder(config: try Scene.config(room: room, display: "90:Rec", protection: recorderProtection, tap: tap), directory: out)
        let recording = Task { try await recorder.run() }
        let toneA = try await Audio.tone(440, seconds: 16, in: dir), toneB = try await Audio.tone(880, seconds: 5, in: dir)
        func publish(_ id: String, _ store: FrameKeyStore<FrameCryptorFormat>, _ tone: URL) -> Task<Void, any Error> {
            Task { _ = try await Player(config: try Scene.config(room: room, display: "\(id):Sender \(id)", protection: .indexed(IndexedProtection(store: store, sender: id))),
                                    file: tone.path).run() }
        }
        let a = publish("7", senderA, toneA)
        // A's frames flow, past its first packets' wait for lip sync, before B joins.
        #expect(await eventually(within: 20) { opened.withLock { $0.values.first?.count ?? 0 } >= 100 }, "A's frames never opened")
        let feedA = try #require(opened.withLock { $0.keys.first })
        let b = publish("8", senderB, toneB)
        #expect(await eventually(within: 20) { arrived.withLock { $0.keys.contains { $0 != feedA } } }, "B's frames never arrived")
        let firstB = ProcessInfo.processInfo.systemUptime
        try await Task.sleep(for: .seconds(1))  // the lateness under test
        let handedIn = ProcessInfo.processInfo.systemUptime
        try recorderKeys.set(participant: "8", index: 0, material: kb)
        _ = try await b.value
        _ = try await a.value
        // B's frames and A's last ones reach the files.
        try await Task.sleep(for: .seconds(1))
        recording.cancel()
        let manifest = try await recording.value

        // A through B's wait for its key: a frame every 20 ms; a stalled streaming thread shows
        // as a gap of about 1 s (then the queued frames in a burst).
        let during = opened.withLock { $0[feedA] ?? [] }.filter { $0 >= firstB - 0.5 && $0 <= handedIn + 0.5 }
        let longest = zip(during.dropFirst(), during).map { $0 - $1 }.max() ?? .infinity
        #expect(during.count >= 60 && longest < 0.5,
                "A's frames opened while B waited for its key: \(during.count), longest gap \(String(format: "%.3f", longest)) s")
        let bFirstOpened = opened.withLock { $0.first { $0.key != feedA }?.value.first }
        #expect((bFirstOpened ?? 0) >= handedIn, "B's first frame opened before its key was in")
        let waited = arrived.withLock { $0.first { $0.key != feedA }?.value.filter { $0 < handedIn }.count ?? 0 }
        #expect(waited >= 25, "B's frames that arrived before its key: \(waited)")
        print("key stall: A opened \(during.count) frames while B waited, longest gap \(String(format: "%.3f", longest)) s; B: \(waited) frames waited for the key")
        // Read back: every frame of each opened, each tone whole in its file.
        #expect(Set(manifest.feeds.map(\.userID)) == ["7", "8"] && manifest.unrecorded.isEmpty)
        for (id, hz, seconds) in [("7", 440.0, 16.0), ("8", 880.0, 5.0)] {
            let feed = try #require(manifest.feeds.first { $0.userID == id })
            #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received && feed.frames.received >= Int(seconds * 40),
                    "\(id): \(feed.frames)")
            let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
            #expect(Double(samples.count) / 48000 >= 0.8 * seconds, "\(feed.file): \(Double(samples.count) / 48000) s")
            #expect(abs((Audio.dominantFrequency(samples) ?? 0) - hz) <= hz * 0.02, "\(feed.file)")
        }
    }
}
