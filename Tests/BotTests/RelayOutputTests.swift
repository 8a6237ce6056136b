import Comeback
import Foundation
import Logging
import Testing
@testable import Bot
import TestSupport

/// The output's loop alone, without Janus: a destination that refuses is tried again and again
/// (never ending the relay), nothing handed to it counts as sent, and a stop ends the loop at
/// once, also in the middle of a backoff.
@Suite struct RelayOutputTests {
    @Test func aRefusingDestinationIsRetriedUntilTheStop() async throws {
        let port = try RelayServers.freePort()   // nothing listens there: connection refused
        let status = RelayStatus()
        let output = RelayOutput(destination: try RelayDestination("rtmp://127.0.0.1:\(port)/live/k"), tracks: .init(audio: true, video: true),
                                 library: try PipelineLibrary(), status: status, logger: Scene.logger,
                                 backoff: Backoff(initial: .milliseconds(50), cap: .milliseconds(200), seed: 7))
        let loop = Task.detached { await output.run() }
        let retried = await eventually(within: 20) { output.counts.failures.value >= 4 }
        #expect(retried, "\(output.counts.failures.value) failures, \(output.counts.attempts.value) outputs")
        let frame: [UInt8] = [0xfc, 0xff, 0xfe]
        for _ in 0..<10 { frame.withUnsafeBytes { output.pushAudio($0) } }
        #expect(output.counts.audioSent.value == 0, "nothing reaches a destination that refuses")
        let snapshot = status.snapshot
        #expect(snapshot.phase == .retrying || snapshot.phase == .sending)
        #expect(snapshot.lastError?.contains("refused") == true, "\(snapshot.lastError ?? "no error")")
        #expect(snapshot.destination == "rtmp://127.0.0.1:\(port)/live/***")
        let stopped = ContinuousClock.now
        output.stop()
        await loop.value
        #expect(stopped.duration(to: .now) < .seconds(4), "the stop ends the loop, even in a backoff")
    }

    @Test func aStopDuringALongBackoffEndsAtOnce() async throws {
        let port = try RelayServers.freePort()
        let output = RelayOutput(destination: try RelayDestination("rtmp://127.0.0.1:\(port)/live/k"), tracks: .init(audio: true, video: false),
                                 library: try PipelineLibrary(), status: RelayStatus(), logger: Scene.logger,
                                 backoff: Backoff(initial: .seconds(60), cap: .seconds(60), jitter: 1...1))
        let loop = Task.detached { await output.run() }
        #expect(await eventually(within: 20) { output.counts.failures.value >= 1 })
        let stopped = ContinuousClock.now
        output.stop()
        await loop.value
        #expect(stopped.duration(to: .now) < .seconds(2), "not after the 60 s backoff")
    }

    /// After a pause, video goes on at a keyframe: the frames between the resume and the next
    /// keyframe are held (`.waitingForKeyFrame`, which makes the input ask the sender for one),
    /// or a player shows them as damage.
    @Test func afterAResumeVideoWaitsForAKeyFrame() async throws {
        let port = try RelayServers.freePort(span: 2)   // plain RTP: nothing needs to listen
        let pauses = RecordingPauses()
        let output = RelayOutput(destination: try RelayDestination("rtp://127.0.0.1:\(port)"), tracks: .init(audio: false, video: true),
                                 library: try PipelineLibrary(), status: RelayStatus(), pauses: pauses, logger: Scene.logger)
        let loop = Task.detached { await output.run() }
        #expect(await eventually(within: 20) { output.counts.attempts.value >= 1 })
        // An IDR and a non-IDR slice (Annex-B); their content does not matter to the output.
        let key: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00], delta: [UInt8] = [0, 0, 0, 1, 0x41, 0x9a, 0x02, 0x00]
        func push(_ au: [UInt8]) -> RelayGraph.PushResult { au.withUnsafeBytes { output.pushVideo($0, isKey: au[4] == 0x65) } }
        #expect(await eventually(within: 10) { push(key) == .sent })
        #expect(push(delta) == .sent)
        #expect(pauses.pause())
        #expect(push(delta) == .refused && output.counts.paused.value == 1)
        #expect(pauses.resume())
        #expect(push(delta) == .waitingForKeyFrame && push(delta) == .waitingForKeyFrame)
        #expect(push(key) == .sent && push(delta) == .sent)
        output.stop()
        await loop.value
    }
}
