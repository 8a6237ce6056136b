import FrameCrypto
import Foundation
import GStreamerKit
import Locking
import Logging
import Synchronization

/// The whole room in one picture and one mix (`pipelines/relay-composite.pipeline`), encoded
/// ONCE and handed to the relay's `RelayOutput` as if it were one participant.
///
/// Why a pipeline of its own rather than the compositor inside the output graph: the output is
/// torn down and remade whenever the destination fails; the decoders, the layout and the
/// encoder must not be (a new encoder would start a new stream of pictures, the slots would
/// have to be requested again on every try). Why the output rather than a muxer here: it
/// already has the muxers, the retries with backoff, pause and the counters. So this graph's
/// encoded H.264 (from `video_out`) and mixed PCM (`audio_out`, encoded to AAC once in the
/// output: relay-pcm-audio) go to `output` as a participant's opened frames would, and the
/// output's keyframe requests (a new try starts on one) become a force-key-unit on x264.
///
/// Nothing is sent before the first frame opened in some participant's slot: with a wrong key
/// the destination is never even connected to. The pipeline runs (black, silent) from the start
/// so a join is only a pad request.
final class CompositeMixer: Sendable {
    let pipeline: Pipeline
    let format: CompositeFormat
    let layout: CompositeLayout
    let output: RelayOutput
    let library: PipelineLibrary
    let log: Logger
    let compositor: Element
    let audioMixer: Element
    /// The encoder's keyframe requests (at most one a second).
    let keyFrames: KeyFrameRequests
    /// Audio the mixer dropped as late, pictures not made at the rate.
    let losses: CompositeLosses
    private let probes: [PadProbe]
    /// The slots, the active speaker and the layout, under one lock: slots come and go on the
    /// room's actor (off the pool), levels arrive on the slots' streaming threads.
    let state = Locked(Slots())
    private let run = Locked(Run.idle)
    /// Set once the output runs: the encoded pictures and the mix go to it from then on, until
    /// `ended` (the output is being stopped).
    private let sending: Flag
    private let ended: Flag

    private enum Run { case idle, running(Task<Void, Never>), stopped }

    struct Slots {
        var list: [CompositeSlot] = []
        var next = 0
        var speaker = ActiveSpeaker()
        /// The slot whose picture fills the frame (`--layout speaker`).
        var shown: Int?
        var speakerChanges = 0
    }

    /// Builds the pipeline and starts it, off Swift's pool (a state change joins threads).
    /// `play` takes it to PLAYING (tests: as slowly as a loaded machine may).
    static func start(format: CompositeFormat, layout: CompositeLayout, output: RelayOutput, library: PipelineLibrary, logger: Logger,
                      play: @escaping @Sendable (Pipeline) throws(GStreamerError) -> Void = { pipeline throws(GStreamerError) in try pipeline.setState(.playing) })
        async throws(BotError) -> CompositeMixer {
        let description = try library.description("relay-composite", format.pipelineValues)
        return try await OffPool.run { () throws(BotError) -> CompositeMixer in
            let pipeline: Pipeline
            do throws(GStreamerError) { pipeline = try Pipeline(description: description) } catch { throw .media(error) }
            let mixer = try CompositeMixer(pipeline: pipeline, format: format, layout: layout, output: output, library: library, logger: logger)
            do throws(GStreamerError) { try play(pipeline) } catch {
                pipeline.setStateQuietly(.null)
                throw .media(error)
            }
            return mixer
        }
    }

    private init(pipeline: Pipeline, format: CompositeFormat, layout: CompositeLayout, output: RelayOutput, library: PipelineLibrary,
                 logger: Logger) throws(BotError) {
        (self.pipeline, self.format, self.layout, self.output, self.library, log) = (pipeline, format, layout, output, library, logger)
        let losses = CompositeLosses(fps: format.fps)
        self.losses = losses
        do {
            compositor = try pipeline.element(named: "vmix")
            audioMixer = try pipeline.element(named: "amix")
            let encoder = try pipeline.element(named: "encoder").staticPad("src")
            let keyFrames = KeyFrameRequests(ask: { _ = encoder.requestKeyFrame() }), (sending, ended) = (Flag(), Flag())
            (self.keyFrames, self.sending, self.ended) = (keyFrames, sending, ended)
            probes = [
                try pipeline.element(named: "video_out").staticPad("sink").addBufferObserver { au in
                    losses.madePicture()
                    guard sending.isSet, !ended.isSet else { return }
                    // A new try at the destination waits for a keyframe: the encoder makes one now.
                    let key = AnnexB.containsIDR(au)
                    if key { keyFrames.keyFrameArrived() }
                    if output.pushVideo(au, isKey: key) == .waitingForKeyFrame { keyFrames.request() }
                },
                try pipeline.element(named: "audio_out").staticPad("sink").addBufferObserver { pcm in
                    guard sending.isSet, !ended.isSet else { return }
                    output.pushAudio(pcm)
                },
            ]
        } catch { throw .media(error) }
        output.keyFrames.withLock { $0 = keyFrames }
        forwardBus()
    }

    /// A frame opened in some slot: the first one starts the output (the connection to the
    /// destination). Called on streaming threads, for every frame: cheap after the first.
    func opened() {
        guard !sending.isSet else { return }
        run.withLock { run in
            guard case .idle = run else { return }
            log.info("the first frame opened: sending the composite (\(format), \(layout.rawValue)) to \(output.destination)")
            let output = self.output
            // Not a child task: the stop must reach it uncancelled, to end the stream cleanly.
            run = .running(Task.detached { await output.run() })
            sending.set()
        }
    }

    /// Whether anything opened (and so the output was started).
    var started: Bool { sending.isSet }

    /// Ends the stream (the muxer's end through the sink, at most 3 s) and stops the pipeline.
    func finish() async {
        let task: Task<Void, Never>? = run.withLock { run in
            defer { run = .stopped }
            if case .running(let task) = run { return task }
            return nil
        }
        ended.set()
        if let task {
            output.stop()
            await task.value
        }
        await pipeline.stop()
    }

    /// The pipeline's errors, logged. One slot's decoder failing leaves the others; the
    /// composite's own elements failing leave a stalled stream, said at error level. A warning
    /// is said once (an aggregator repeats its own at every latency query); the mixer's QoS
    /// messages are its late audio, counted.
    private func forwardBus() {
        let bus = pipeline.bus.messages(), log = self.log, losses = self.losses
        Task {
            var warned: Set<String> = []
            for await message in bus {
                switch message {
                case .error(let source, let text, _): log.error("composite: \(source): \(text)")
                case .warning(let source, let text, let debug):
                    if warned.insert(source + text).inserted { log.warning("composite warning from \(source): \(text) \(debug ?? "")") }
                case .qos(let source, _, _, let dropped): losses.qos(source: source, dropped: dropped)
                default: break
                }
            }
        }
    }
}

