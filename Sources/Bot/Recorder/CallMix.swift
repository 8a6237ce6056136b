import Foundation
import GStreamerKit
import Locking
import Synchronization

/// `record --mix FILE`: one Ogg Opus track of the whole call (`record-mix.pipeline`), into which
/// every audio recording feeds its decrypted frames while it lasts.
final class CallMix: Sendable {
    let file: RecordingFile
    /// The mix's branch (tests watch its mixer).
    let bin: Bin
    private let library: PipelineLibrary
    private let finished: AsyncStream<Void>
    private let endProbe: PadProbe
    private let bytesProbe: PadProbe
    private let inputs = Atomic<Int>(0)
    private let failed = Atomic<Bool>(false)
    /// Samples (48 kHz) the mixer dropped as late, by its sink pad: each QoS message carries its
    /// pad's running total. Only the inputs' pads are listed, not the silence's.
    private let lateSamples = Locked<[String: UInt64]>([:])
    /// The name of the mix's branch in the pipeline (its inputs are `<feed branch>-mix<n>`).
    static let branchName = "mix"
    /// How far the mix runs behind the clock, as `record-mix.pipeline` says (its `delay` queue's
    /// min-threshold-time): what an input's pad may hold when it is taken out.
    let delay: Duration
    /// The mix's sample rate (`record-mix.pipeline`'s caps).
    static let rate: UInt64 = 48_000

    /// Adds the mixer to the (running) subscriber pipeline and starts it (`start`: tests start it
    /// as slowly as a loaded machine may). Running already: a bin sets each child's base time
    /// before its state change, so the live mixer never waits on the clock without it. In a
    /// pipeline about to play it would: the pipeline gives every element the clock first, and a
    /// mixer woken before its base time ran seconds ahead (the relay composite's start race; here,
    /// measured, 2020 ms of 2020 of a publisher dropped as late).
    init(file: RecordingFile, pipeline: Pipeline, library: PipelineLibrary, start: (Bin) -> Bool = { $0.syncStateWithParent() }) throws {
        self.file = file
        self.library = library
        bin = try pipeline.addBin(description: try library.description("record-mix", ["file": file.access.path]), name: Self.branchName)
        let queue = try bin.element(named: "delay")
        guard let delay = UInt64(try queue.get("min-threshold-time")), delay > 0,
              let samples = UInt64(try bin.element(named: "silence").get("samplesperbuffer")), samples > 0 else {
            throw BotError.output("record-mix.pipeline: give the queue `delay` a min-threshold-time (ns) and `silence` a samplesperbuffer")
        }
        self.delay = .nanoseconds(delay)
        // The same delay in the silence's buffers: the queue counts its time from running time 0,
        // not from the silence's first buffer, so a silence that began late (the branch slow to
        // start on a loaded machine) passed that much sooner and left the mix less behind for
        // the whole call (begun 1 s late: 1.5 s, and 0.2-0.5 s of a publisher held 2 s dropped).
        let buffer = samples * 1_000_000_000 / Self.rate
        try queue.set("min-threshold-buffers", Int((delay + buffer - 1) / buffer))
        let (finished, done) = AsyncStream.makeStream(of: Void.self)
        self.finished = finished
        let sink = try bin.element(named: "file").staticPad("sink")
        endProbe = sink.onEndOfStream { done.yield(); done.finish() }
        let bytesOut = BotMetrics.bytesWritten()
        bytesProbe = sink.addBufferObserver { bytesOut.add($0.count) }
        guard start(bin) else { throw BotError.output("the mix \(file.shown.path) could not be started") }
    }

    /// Whether writing the mix failed: recordings stop feeding it and go on without it.
    var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// Marks the mix failed; true the first time.
    func markFailed() -> Bool { !failed.exchange(true, ordering: .relaxed) }

    /// Whether the pipeline child `branch` is the mix or one of its inputs.
    static func owns(branch: String) -> Bool {
        branch == branchName || branch.wholeMatch(of: /.+-mix[0-9]+/) != nil
    }

    /// Feeds a recording's decrypted Opus frames (its `split` tee) into the mix until `Input.remove`.
    func add(from feed: Bin, in pipeline: Pipeline) throws -> Input {
        let n = inputs.add(1, ordering: .relaxed).newValue
        let tap = try feed.exposeRequestPad(of: "split", template: "src_%u")
        let decode = try pipeline.addBin(description: try library.description("record-mix-input"), name: "\(feed.name)-mix\(n)")
        let sink = try bin.exposeRequestPad(of: "mix", template: "sink_%u")
        // What the mixer drops of this input as late (later than the mix's delay) is posted, and
        // counted: a loss like any other (`lateMilliseconds`).
        let mixerPad = bin.exposedTarget(sink)
        try mixerPad?.set("qos-messages", "true")
        let padName = mixerPad?.name ?? ""
        lateSamples.withLock { $0[padName] = 0 }
        try decode.staticPad("src").link(to: sink)
        decode.syncStateWithParent()
        try tap.link(to: try decode.staticPad("sink"))
        return Input(mix: bin, feed: feed, tap: tap, decode: decode, sink: sink, mixerPad: padName)
    }

    /// A QoS message from the recorder's bus: counted if it is an input's pad of the mixer.
    func qos(source: String, dropped: UInt64) {
        lateSamples.withLock { totals in
            guard let before = totals[source], dropped > before else { return }
            totals[source] = dropped
        }
    }

    /// An input's audio the mixer dropped as late so far, in milliseconds.
    func lateMilliseconds(of input: Input) -> Int { Int(lateSamples.withLock { $0[input.mixerPad] ?? 0 } * 1000 / Self.rate) }

    /// One recording's way into the mix.
    struct Input: Sendable {
        fileprivate let mix: Bin, feed: Bin, tap: Pad, decode: Bin, sink: Pad
        /// The mixer's own sink pad's name (its QoS messages').
        fileprivate let mixerPad: String

        /// After the recording's end-of-stream went into the branch: waits until the mixer took
        /// it in, at most `timeout`. The mix runs `record-mix.pipeline`'s delay behind the clock,
        /// and what its pad still holds would be lost with the pad. False if it did not.
        func drained(timeout: Duration) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !mix.exposedPadTookEndOfStream(sink) {
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return true
        }

        /// After the recording's end-of-stream went through: takes the branch out and gives
        /// the mixer pad back (the mix goes on with the others and the silence).
        func remove(from pipeline: Pipeline) {
            pipeline.remove(decode)
            mix.releaseExposedPad(sink)
            feed.releaseExposedPad(tap)
        }
    }

    /// Ends the track: end-of-stream from the silence (the inputs have ended theirs), then
    /// waits for the file to be finished.
    /// Not cut short by the caller's cancellation (`Finishing`).
    func finish(in pipeline: Pipeline, timeout: Duration = .seconds(5)) async {
        await Finishing.run { [self] in
            _ = try? bin.element(named: "silence").sendEndOfStream()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in self.finished { return } }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
            await OffPool.run { [self] in
                pipeline.remove(bin)
                endProbe.remove()
            }
        }
    }
}
