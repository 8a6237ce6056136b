import Comeback
import Foundation
import GStreamerKit
import Logging
import CoreMetrics
import Locking
import Synchronization

/// The destination side of a relay: the graph of the moment (`RelayGraph`), fed from the
/// input branches' streaming threads, and the loop that (re)makes it. A destination that is
/// down, refuses, or drops the connection is tried again with backoff (0.5 s doubling to
/// 10 s, jittered) while the call goes on; frames that arrive meanwhile are counted, not kept.
final class RelayOutput: RelayFrameSink {
    enum Event: Sendable {
        case failed(graph: Int, String)
        case ended(graph: Int)
        case retry
        case stop
        case stopTimeout
    }

    let destination: RelayDestination
    let counts = RelayCounts()
    let delays = RelayDelays()
    let metrics = RelayMetrics()
    let status: RelayStatus
    /// While paused, opened frames are held back (counted) and the stream stays open.
    let pauses: RecordingPauses
    private let tracks: RelayTracks
    private let library: PipelineLibrary
    private let log: Logger
    private let current = Locked<RelayGraph?>(nil)
    private let events = AsyncStream.makeStream(of: Event.self)
    /// The video input's keyframe requests: a new graph asks the sender for one at once.
    let keyFrames = Locked<KeyFrameRequests?>(nil)
    private let backoff: Backoff
    /// Set while paused: the video after a resume starts at a keyframe (the player would show
    /// the frames after it as damage until the next one).
    private let resumeAtKeyFrame = Atomic<Bool>(false)

    init(destination: RelayDestination, tracks: RelayTracks, library: PipelineLibrary, status: RelayStatus, pauses: RecordingPauses = RecordingPauses(), logger: Logger,
         backoff: Backoff = Backoff(initial: .milliseconds(500), cap: .seconds(10))) {
        self.destination = destination
        self.tracks = tracks
        self.library = library
        self.status = status
        self.pauses = pauses
        self.log = logger
        self.backoff = backoff
    }

    // MARK: - Frames (streaming threads)

    func pushAudio(_ frame: UnsafeRawBufferPointer) {
        if heldBack() { return }
        let sent = current.withLock { $0?.pushAudio(frame) } ?? false
        if sent {
            counts.audioSent.increment()
            metrics.audioSent.increment()
            // The composite's mixed PCM is not what leaves (AAC, encoded in the graph): not counted.
            if !tracks.pcmAudio { metrics.bytes.increment(by: frame.count) }
        } else {
            counts.unsent.increment()
            metrics.audioUnsent.increment()
        }
    }

    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult {
        if heldBack() {
            resumeAtKeyFrame.store(true, ordering: .relaxed)
            return .refused
        }
        // Resumed: nothing until a keyframe, which `.waitingForKeyFrame` makes the input ask for.
        let result: RelayGraph.PushResult
        if resumeAtKeyFrame.load(ordering: .relaxed), !isKey {
            result = .waitingForKeyFrame
        } else {
            resumeAtKeyFrame.store(false, ordering: .relaxed)
            result = current.withLock { $0?.pushVideo(au, isKey: isKey) } ?? .refused
        }
        switch result {
        case .sent:
            counts.videoSent.increment()
            metrics.videoSent.increment()
            metrics.bytes.increment(by: au.count)
        case .waitingForKeyFrame:
            counts.beforeKeyFrame.increment()
            metrics.beforeKeyFrame.increment()
        case .refused:
            counts.unsent.increment()
            metrics.videoUnsent.increment()
        }
        return result
    }

    /// Paused: the frame is counted and not sent.
    private func heldBack() -> Bool {
        guard pauses.isPaused else { return false }
        counts.paused.increment()
        metrics.paused.increment()
        return true
    }

    // MARK: - The loop

    /// Makes the graph, remakes it after each failure, until `stop()`; then ends the stream
    /// (end-of-stream through the muxer, at most 3 s) and returns.
    func run() async {
        var backoff = self.backoff
        var number = 0
        while true {
            number += 1
            let graph: RelayGraph
            do {
                let (destination, tracks, library, n, delays) = (self.destination, self.tracks, self.library, number, self.delays)
                graph = try await OffPool.run { () throws(BotError) -> RelayGraph in
                    try RelayGraph(destination: destination, tracks: tracks, library: library, number: n, delays: delays)
                }
            } catch {
                if await !waitAfterFailure("\(error)", &backoff, afterHolding: false) { return }
                continue
            }
            let started = ContinuousClock.now
            forwardBus(of: graph)
            current.withLock { $0 = graph }
            counts.attempts.increment()
            status.outputUp(destination: destination.description)
            log.info("connecting to \(destination) (try \(number))")
            keyFrames.withLock { $0 }?.request()
            // A slow destination shows as frames its queue drops: counted and said each second.
            let sampler = Task { [weak self] in
                while (try? await Task.sleep(for: .seconds(1))) != nil { self?.account(graph) }
            }
            let outcome = await follow(graph)
            current.withLock { $0 = nil }
            sampler.cancel()
            _ = await sampler.value
            switch outcome {
            case .stopped:
                await graph.pipeline.stop()
                account(graph)
                return
            case .failed(let why):
                await graph.pipeline.stop()
                account(graph)
                // A destination that held for a while starts its backoff over.
                let held = started.duration(to: .now) > RelayStatus.held
                if held { backoff.reset() }
                if await !waitAfterFailure(why, &backoff, afterHolding: held) { return }
            }
        }
    }

    /// Frames `graph`'s queues dropped since the last look: counted (a loss: the relay ends
    /// incomplete), and said in the status and the log.
    private func account(_ graph: RelayGraph) {
        let (audio, video) = graph.newlyDropped()
        guard audio + video > 0 else { return }
        counts.droppedInOutput.increment(by: audio + video)
        metrics.audioDroppedInOutput.increment(by: Int64(audio))
        metrics.videoDroppedInOutput.increment(by: Int64(video))
        let why = "\(destination) takes the stream slower than it comes: \(counts.droppedInOutput.value) frames dropped in the output so far"
        status.set(status.snapshot.phase, error: why)
        log.warning("\(why) (\(audio) audio, \(video) video in the last second)")
    }

    /// Ends the loop: the stream is closed cleanly and `run` returns.
    func stop() { events.continuation.yield(.stop) }

    private enum Outcome { case stopped, failed(String) }

    /// Waits for the graph's failure or the stop (after which its end-of-stream is waited for).
    private func follow(_ graph: RelayGraph) async -> Outcome {
        var stopping = false
        for await event in events.stream {
            switch event {
            case .failed(let n, let why) where n == graph.number:
                if stopping { return .stopped }
                return .failed(why)
            case .ended(let n) where n == graph.number:
                if stopping { return .stopped }
                return .failed("the output ended")
            case .stop:
                stopping = true
                current.withLock { $0 = nil }
                graph.endOfStream()
                let events = self.events.continuation
                Task {
                    guard (try? await Task.sleep(for: .seconds(3))) != nil else { return }
                    events.yield(.stopTimeout)
                }
            case .stopTimeout where stopping:
                return .stopped
            case .failed, .ended, .retry, .stopTimeout:
                break
            }
        }
        return .stopped
    }

    /// Says why the destination failed, waits the backoff's next delay (a stop cuts it short);
    /// false if the relay is stopping.
    private func waitAfterFailure(_ why: String, _ backoff: inout Backoff, afterHolding: Bool) async -> Bool {
        let wait = backoff.nextDelay()
        counts.failures.increment()
        metrics.failures.increment()
        status.destinationFailed(why, destination: destination.description, afterHolding: afterHolding)
        log.warning("\(destination) failed: \(why); trying again in \(String(format: "%.1f", wait.seconds)) s (the call goes on)")
        let events = self.events.continuation
        let timer = Task {
            guard (try? await Task.sleep(for: wait)) != nil else { return }
            events.yield(.retry)
        }
        defer { timer.cancel() }
        for await event in self.events.stream {
            switch event {
            case .retry: return true
            case .stop: return false
            case .failed, .ended, .stopTimeout: break
            }
        }
        return false
    }

    /// The graph's errors and end, as events; a warning is only logged.
    private func forwardBus(of graph: RelayGraph) {
        let events = self.events.continuation, log = self.log, number = graph.number
        Task {
            for await message in graph.bus {
                switch message {
                case .error(let source, let text, _):
                    events.yield(.failed(graph: number, "\(source): \(text)"))
                    return
                case .endOfStream:
                    events.yield(.ended(graph: number))
                    return
                case .warning(let source, let text, _):
                    log.debug("relay output warning from \(source): \(text)")
                default: break
                }
            }
        }
    }
}
