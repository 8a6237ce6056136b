@testable import Bot
import Foundation
import FrameCrypto
import Testing
import TestSupport

extension MediaScene {
    /// Issue 42's last note: every publisher of a room stopped sending at once, and the recorder
    /// took the silence for its own path dying: a new PeerConnection, a gap from the last frame,
    /// every publisher present through it `lost`, exit 74, about media nobody sent. Two `sfubot
    /// play` publishers here: one hangs (SIGSTOP: its WebSocket stays open) and one is killed
    /// (SIGKILL: Janus keeps its session for the reclaim timeout, 30 s), so Janus lists both
    /// with no media; `sfubot record` goes on 11 s past the silence. And the converse: the same
    /// silence, then Janus's media ports cut, is a loss still.
    @Suite struct SilentPublishersTests {
        @Test("both publishers stop at once (one hung, one killed) and Janus still lists them: no gap, no loss, exit 0")
        func silentPublishersAreNotALoss() async throws {
            let dir = try Scene.tempDirectory("silent-publishers")
            defer { try? FileManager.default.removeItem(at: dir) }
            let room = try await Scene.createRoom()
            let o = try await Self.record(janus: Scene.janusURL!, room: room, seconds: 17, in: dir) {}
            let m = o.manifest
            print("silent publishers: exit \(o.status), gaps \(m.gaps.map(\.cause)), errors \(m.errors.map(\.error)), \(m.reconnection)")
            #expect(o.status == 0, "nothing was lost: \(o.err.suffix(1500))")
            #expect(m.gaps.isEmpty && m.errors.isEmpty && m.reconnection.mediaRestarts == 0, "gaps \(m.gaps), errors \(m.errors.map(\.error))")
            #expect(o.err.contains("they are silent, the media path works"), "the recorder saw the silence and Janus's reports: \(o.err.suffix(1500))")
            Self.checkRecorded(m)
        }

        @Test("the same silence, then all UDP of Janus's media ports cut (iptables): its reports stop too, so the path is lost: a gap, the publishers' loss, exit 74")
        func silentPublishersThenACutPathIsALoss() async throws {
            let dir = try Scene.tempDirectory("silent-then-cut")
            defer { try? FileManager.default.removeItem(at: dir) }
            try await OwnJanus.with(port: 8271, in: dir, reclaimTimeout: 30, rtpPorts: 15400...15499) { janus in
                let room = try await Scene.createPermanentRoom(janus.url)
                // Cut once the silence was judged quiet (4 s and more into it).
                let o = try await Self.record(janus: janus.url, room: room, seconds: 20, in: dir) {
                    try await Task.sleep(for: .seconds(6.5))
                    try await Faults.dropUDP(ports: janus.rtpPorts, for: .seconds(6))
                }
                let m = o.manifest
                print("silent, then cut: exit \(o.status), gaps \(m.gaps.map { "\($0.cause) \(String(format: "%.1f", $0.seconds ?? -1)) s" }), errors \(m.errors.count), \(m.reconnection)")
                #expect(o.status == 74, "the cut path is a loss: \(o.err.suffix(1500))")
                #expect(o.err.contains("they are silent, the media path works"), "quiet before the cut: \(o.err.suffix(1500))")
                #expect(m.gaps.count >= 1 && m.gaps.allSatisfy { $0.cause.hasPrefix("no media for") }, "\(m.gaps)")
                #expect(Set(m.errors.compactMap(\.feedID)).count == 2, "both publishers were in the room through the gap: \(m.errors.map(\.error))")
                Self.checkRecorded(m)
            }
        }

        struct Outcome {
            var status: Int32
            var err: String
            var manifest: RecordingManifest
        }

        /// `sfubot record` for `seconds`; two test-pattern publishers from 1 s, both silenced at 6 s
        /// (SIGSTOP and SIGKILL); then `afterSilence`; the recorder's exit, log and manifest.
        static func record(janus: String, room: Int64, seconds: Int, in dir: URL,
                           afterSilence: () async throws -> Void) async throws -> Outcome {
            let out = dir.appendingPathComponent("rec")
            let recorder = try SfubotProcess.start(["record", "--janus", janus, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                    "--out", out.path, "--duration", "\(seconds)"])
            try await Task.sleep(for: .seconds(1))
            let players = try (1...2).map { i in
                try SfubotProcess.start(["play", "--test-pattern", "--janus", janus, "--room", "\(room)", "--key-hex", RelayCase.key,
                                         "--display", "\(i):Silent\(i)"])
            }
            // A stopped process is killed too.
            defer { for p in players { p.signal(SIGKILL) } }
            try await Task.sleep(for: .seconds(5))
            players[0].signal(SIGSTOP)
            players[1].signal(SIGKILL)
            try await afterSilence()
            let ran = await recorder.finished()
            return Outcome(status: ran.status, err: ran.errText, manifest: try RecordingManifest.read(from: out))
        }

        /// Both publishers were recorded before they fell silent.
        static func checkRecorded(_ m: RecordingManifest) {
            let recorded = Dictionary(grouping: m.feeds, by: \.feedID).filter { $0.value.contains { $0.frames.received > 20 } }
            #expect(recorded.count == 2, "feeds \(m.feeds.map { "\($0.feedID) \($0.kind) \($0.frames.received)" })")
        }
    }
}
