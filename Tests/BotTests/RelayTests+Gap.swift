import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// The participant publishes 6 s, leaves, and comes back 3 s later as a new feed (the same user
    /// id): one RTMP stream carries both, never ended or reconnected, the gap in its timeline.
    @Test func participantGapKeepsTheStream() async throws {
        let dir = try Scene.tempDirectory("relay-gap")
        let source = try await RelayCase.source(in: dir, seconds: 6)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let relay = try RelayCase.relay(to: "rtmp://127.0.0.1:\(port)/live/gap", room: room, seconds: 22)
        let got = dir.appendingPathComponent("gap.flv")
        // nginx holds a player until the stream is published: it reads from the first frame on.
        let reading = Task { await RelayCase.readBack("rtmp://127.0.0.1:\(port)/live/gap", seconds: 14, to: got) }
        try await Task.sleep(for: .seconds(1))
        let first = await (try RelayCase.publisher(source, room: room)).finished()
        try await Task.sleep(for: .seconds(3))
        let second = await (try RelayCase.publisher(source, room: room)).finished()
        let ran = await relay.finished()
        let read = await reading.value
        await nginx.stop()
        #expect(first.status == 0 && second.status == 0, "\(first.errText.suffix(500)) \(second.errText.suffix(500))")
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
        #expect(read, "nothing came back from nginx")
        let c = RelayCase.counters(ran.outText)
        // One 6 s feed gives at most 300 audio frames: more is both feeds, into one output.
        #expect(c.relayedAudio > 420 && c.outputs == 1 && c.failures == 0, "\(ran.outText)")
        let streams = try await RelayCase.probe(got)
        let samples = try await RelayCase.audioSamples(got)
        // The longest run of quiet 100 ms windows: the gap (3 s between the publishers, and the
        // second one's setup) is silence in the stream, between the two tones.
        var run = (start: 0.0, count: 0), current = (start: 0.0, count: 0), previous = -1.0
        for t in Audio.quietWindows(samples) {
            current = abs(t - previous - 0.1) < 0.01 ? (current.start, current.count + 1) : (t, 1)
            if current.count > run.count { run = current }
            previous = t
        }
        print("relay gap: \(streams.duration) s read back, \(Double(samples.count) / 48000) s of audio, silent from \(run.start) s for \(Double(run.count) / 10) s, \(c.relayedAudio) audio and \(c.relayedVideo) video frames relayed")
        #expect(run.count >= 25 && run.start > 3, "silent from \(run.start) s for \(Double(run.count) / 10) s")
        #expect(streams.duration >= 11, "both feeds and the gap between them: \(streams.duration) s")
        let tone = samples.count >= 48000 * 11 ? [samples[48000..<96000], samples[(samples.count - 96000)..<(samples.count - 48000)]] : []
        #expect(tone.count == 2 && tone.allSatisfy { Audio.power($0, at: 440) > 10 * Audio.power($0, at: 880) }, "the tone before and after the gap")
    }
}
