import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene.DirectReceiveTests {
    /// Packets lost on the way to the recorder. The direct path negotiates NACK and asks for
    /// every missing packet, but on this loopback Janus 1.1.2 keeps none to send again (it
    /// measures the round trip as 0 ms: `lostVideoIsRepaired`), and webrtcbin's path does not
    /// even ask (no `do-nack` on its transceivers). So here a lost packet costs its picture on
    /// both paths: what is checked is that it costs only that, never a frame that fails to
    /// open, the order, or the audio.
    @Test("3 % of Janus's video to the recorder dropped (iptables): on either path a lost packet costs its picture and nothing more: every frame written opens, a keyframe is asked for, the audio is whole and in order",
          arguments: [ReceivePath.direct, .webrtcbin])
    func lostVideoCostsOnlyItsPictures(path: ReceivePath) async throws {
        let dir = try Scene.tempDirectory("loss-\(path)")
        let source = try await RelayCase.source(in: dir, seconds: 10)
        try await OwnJanus.with(port: 8281, in: dir, rtpPorts: 15800...15899) { (janus: OwnJanus) async throws -> Void in
            let room = try await Scene.createPermanentRoom(janus.url)
            let (run, dropped) = try await Faults.withDownlinkLoss(from: janus.rtpPorts, percent: 3) {
                try await Self.record(.file(source.path), path: path, janusURL: janus.url, room: room, in: dir)
            }
            let video = try #require(run.manifest.feeds.first { $0.kind == "video" })
            let audio = try #require(run.manifest.feeds.first { $0.kind == "audio" })
            let first = try #require(video.firstMediaTime), last = try #require(video.lastMediaTime)
            let pictures = Int(((last - first) * 15).rounded()) + 1
            let facts = "\(path): \(dropped) packets dropped; \(video.frames.opened) of \(pictures) pictures opened, \(video.frames.droppedTotal) failed; \(video.keyFrameRequests ?? 0) keyframe requests"
            print("loss: \(facts)")
            // About 0.03 × 10 s × 30 video packets a second.
            #expect(dropped >= 3, "\(facts)")
            // (The span of media time is not a count here: on both paths a run now and then
            // reads 120 pictures' span for 140 opened, with the loss, not with the path.)
            #expect(video.frames.droppedTotal == 0 && video.frames.opened >= 75, "\(facts)")
            // One when the feed is added, and more after pictures were lost.
            #expect((video.keyFrameRequests ?? 0) >= 2, "\(facts)")
            // Audio (small packets) is not dropped: all of it, in order.
            let sent = run.sent.frames(.afterSeal).filter { !Self.isVideo($0) }
            let received = run.received.frames(.beforeOpen).filter { !Self.isVideo($0) }
            let place = try #require(Self.placement(sent: sent, received: received))
            #expect(place.outOfPlace == 0 && place.notReceived <= 3, "\(place)")
            #expect(audio.frames.droppedTotal == 0)
        }
    }

    /// The direct path asks for every packet missing (NACK) and sends each stream's receiver
    /// report in a compound of its own (`sfb_rtcp_split`): Janus 1.1.2 keeps a stream's packets
    /// for retransmission only once it measured that stream's round trip, from a compound whose
    /// first report block is the stream's, as a whole number of milliseconds that changed from 0,
    /// and looks a NACK up in that stream only. So on a network what Janus's downlink lost comes
    /// again, the pictures are all in the file, and `repaired` counts them. On the test
    /// namespace's loopback the round trip is under 1 ms: Janus reads 0 and keeps nothing until
    /// one report happens to take a millisecond (measured at Janus's debug level 7 with the
    /// split: "rtt=1" twice in 10 s, then "Scheduling 317 for retransmission due to NACK", one
    /// repaired; before it, "Can't retransmit packet 253, we don't have it"). That part is a
    /// known issue here, not a pass.
    @Test("direct path: 3 % of Janus's video to the recorder dropped (iptables): what Janus sends again when asked is counted in `repaired`, never more than was lost; on a network (a round trip of 1 ms or more) every picture is in the file")
    func lostVideoIsRepaired() async throws {
        let dir = try Scene.tempDirectory("repair")
        let source = try await RelayCase.source(in: dir, seconds: 10)
        try await OwnJanus.with(port: 8283, in: dir, rtpPorts: 15900...15999) { (janus: OwnJanus) async throws -> Void in
            let room = try await Scene.createPermanentRoom(janus.url)
            let (run, dropped) = try await Faults.withDownlinkLoss(from: janus.rtpPorts, percent: 3) {
                try await Self.record(.file(source.path), path: .direct, janusURL: janus.url, room: room, in: dir)
            }
            let video = try #require(run.manifest.feeds.first { $0.kind == "video" })
            let first = try #require(video.firstMediaTime), last = try #require(video.lastMediaTime)
            let pictures = Int(((last - first) * 15).rounded()) + 1
            let repaired = try #require(run.manifest.repaired, "the manifest counts repairs once ICE connected")
            let facts = "\(dropped) packets dropped, \(repaired) repaired; \(video.frames.opened) of \(pictures) pictures opened, \(video.frames.droppedTotal) failed; \(video.keyFrameRequests ?? 0) keyframe requests"
            print("repair: \(facts)")
            #expect(dropped >= 3 && repaired <= dropped, "\(facts)")
            #expect(video.frames.droppedTotal == 0, "\(facts)")
            withKnownIssue("loopback: Janus 1.1.2 measures a round trip under 1 ms as 0 and keeps no packet to send again", isIntermittent: true) {
                // A retransmission can be dropped too (3 %): asked for again, up to four times.
                #expect(repaired >= dropped * 3 / 4, "\(facts)")
                #expect(video.frames.opened + 1 >= pictures, "\(facts)")
            }
        }
    }

    /// KernelDropTests's scene on the direct path: what the kernel dropped while the recorder was
    /// stopped is given up by the reorder buffers at the next packets and counted as a loss.
    @Test("direct path: a recorder with a tiny receive buffer stopped (SIGSTOP) for 3 s: the kernel drops, the reorder buffers give up, the manifest names the loss, exit 74")
    func starvedRecorderReportsTheLoss() async throws {
        let dir = try Scene.tempDirectory("direct-kernel-drops")
        let source = try await RelayCase.source(in: dir, seconds: 20)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        defer { publisher.signal(SIGKILL) }
        let out = dir.appendingPathComponent("rec")
        let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                "--out", out.path, "--duration", "14", "--receive-buffer", "2048", "--receive-path", "direct"])
        try await Task.sleep(for: .seconds(5))
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(recorder.pid)/task"))?.count ?? 0
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(recorder.pid)/task")) ?? [])
            .compactMap { try? String(contentsOfFile: "/proc/\(recorder.pid)/task/\($0)/comm", encoding: .utf8) }
        recorder.signal(SIGSTOP)
        try await Task.sleep(for: .seconds(3))
        recorder.signal(SIGCONT)
        let ran = await recorder.finished()
        print("direct kernel drops: recorder had \(threads) threads, \(names.filter { $0.hasPrefix("rtpjitterbuffer") }.count) rtpjitterbuffer")
        #expect(!names.isEmpty && !names.contains { $0.hasPrefix("rtpjitterbuffer") }, "\(names.sorted())")
        #expect(ran.status == 74, "a loss is exit 74, got \(ran.status): \(ran.errText.suffix(1500))")
        let manifest = try RecordingManifestFile.json(out)
        let drops = manifest["receive_drops"] as? Int ?? 0
        let errors = (manifest["errors"] as? [[String: Any]] ?? []).compactMap { $0["error"] as? String }
        #expect(drops > 0 && errors.contains { $0.contains("never arrived, not repaired by retransmission") }, "receive_drops \(drops), errors \(errors)")
    }
}
