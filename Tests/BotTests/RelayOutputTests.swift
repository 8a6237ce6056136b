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
}
