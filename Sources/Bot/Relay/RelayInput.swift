import FrameCrypto
import GStreamerKit
import Janus
import Logging
import Locking
import Synchronization

/// Where a relay's opened frames go: the live destination (`RelayOutput`), a speaker stream
/// (`SpeakerChannel`) or a participant's slot in the composite (`CompositeSlot`). Called on the
/// input branches' streaming threads.
protocol RelayFrameSink: Sendable {
    /// An opened audio frame as the branch ends: Opus (`relay-audio-in`) or PCM (`speaker-audio`).
    func pushAudio(_ frame: UnsafeRawBufferPointer)
    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult
    /// The video input's keyframe requests, for the sink to ask when it needs one.
    var keyFrames: Locked<KeyFrameRequests?> { get }
    /// Whether the sink uses a frame's capture time (the composite's slots do); the others stamp
    /// frames on arrival, and the input spares them the lookup, once per frame.
    var wantsClockTime: Bool { get }
    /// The same, with the time on the (system) clock the frame was captured for, as the
    /// receiving pipeline's jitter buffer put it (lip-synced by RTCP across audio and video);
    /// nil without one. Sinks that stamp frames on arrival ignore it (the defaults below).
    func pushAudio(_ frame: UnsafeRawBufferPointer, clockTime: UInt64?)
    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool, clockTime: UInt64?) -> RelayGraph.PushResult
}

extension RelayFrameSink {
    var wantsClockTime: Bool { false }
    func pushAudio(_ frame: UnsafeRawBufferPointer, clockTime: UInt64?) { pushAudio(frame) }
    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool, clockTime: UInt64?) -> RelayGraph.PushResult { pushVideo(au, isKey: isKey) }
}

/// The relayed participant's tracks as they leave webrtcbin: per mid a branch that depayloads,
/// opens (decrypts) and hands each opened frame to the sink. Only what opened is handed on;
/// a frame that did not open is dropped and counted by reason (`audio`/`video` stats).
/// Works under one lock: webrtcbin's pad-added handler (a GStreamer thread) and the room's actor.
final class RelayInput: Sendable {
    /// The audio branch: its pipeline file and values (Opus out for a destination, PCM for a
    /// speaker stream), and whether video is relayed at all (a speaker stream discards it).
    struct Branches: Sendable {
        var audio = "relay-audio-in"
        var audioValues: [String: String] = [:]
        var video = true
    }

    struct Branch {
        let bin: Bin
        let pad: Pad
        let probes: [PadProbe]
    }

    struct Map {
        var streams: [String: SubscribedStream] = [:]
        var branches: [String: Branch] = [:]
        /// Pads replaced by a newer one for their mid (Janus sends a returning feed with a new SSRC).
        var retired: [PadProbe] = []
        var discards: [String: Bin] = [:]
    }

    let audio: FrameStats
    let video: FrameStats
    private let times = FrameTimes()
    private let state = Locked(Map())
    /// Where keyframe requests go (a recvonly peer's RTCP PLI does not reliably reach the publisher).
    let keyFrames = KeyFrameRoute()
    private let output: any RelayFrameSink
    private let branches: Branches
    private let config: BotConfig
    private let log: Logger

    /// `audioStats`, `videoStats`: shared when several inputs add up to one report (speaker
    /// streams, the composite).
    init(output: any RelayFrameSink, branches: Branches = Branches(), audioStats: FrameStats = FrameStats(), videoStats: FrameStats = FrameStats(),
         config: BotConfig, logger: Logger) {
        self.output = output
        audio = audioStats
        video = videoStats
        self.branches = branches
        self.config = config
        log = logger
    }

    /// What Janus says each mid carries (before the answer that adds pads).
    func learn(_ streams: [SubscribedStream]) {
        state.withLock { m in for s in streams { m.streams[s.mid] = s } }
    }

    /// Links a webrtcbin pad to its branch (made on first use), or to a discard branch.
    func attach(pad: Pad, mid: String, pipeline: Pipeline) {
        state.withLock { m in
            if let branch = m.branches[mid] {
                // The mid's feed came back on a new pad: the branch goes on from it.
                guard branch.pad.name != pad.name else { return }
                m.retired.append(branch.pad.addDropProbe())
                branch.pad.unlink()
                do {
                    try pad.link(to: try branch.bin.staticPad("sink"))
                    m.branches[mid] = Branch(bin: branch.bin, pad: pad, probes: branch.probes)
                    log.info("relayed \(m.streams[mid]?.type ?? "stream") (mid \(mid)) goes on from pad \(pad.name)")
                } catch { log.error("mid \(mid) could not follow its new pad: \(error)") }
                return
            }
            guard let stream = m.streams[mid], stream.active, stream.type == "audio" || (stream.type == "video" && branches.video) else {
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
                return
            }
            do {
                m.branches[mid] = try makeBranch(pad: pad, stream: stream, pipeline: pipeline)
                log.info("relaying \(stream.type) of feed \(stream.feedID ?? 0) (mid \(mid))")
            } catch {
                log.error("cannot relay \(stream.type) (mid \(mid)): \(error)")
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
            }
        }
    }

    /// Every frame reaching `pad`, with its capture time on the clock (running time plus the
    /// pipeline's base time) only when the sink uses it.
    private static func observe(_ pad: Pad, clockTime: Bool, of pipeline: Pipeline,
                                _ push: @escaping @Sendable (UnsafeRawBufferPointer, UInt64?) -> Void) -> PadProbe {
        guard clockTime else { return pad.addBufferObserver { push($0, nil) } }
        return pad.addRunningTimeObserver { [weak pipeline] frame, running, _ in
            push(frame, running.flatMap { r in pipeline.map { r + $0.baseTime } })
        }
    }

    private func makeBranch(pad: Pad, stream: SubscribedStream, pipeline: Pipeline) throws -> Branch {
        let isVideo = stream.type == "video"
        let protection = config.protection
        let description = isVideo
            ? try config.pipelines.description("relay-video-in", ["h264_stream_format": protection.receivedH264Format])
            : try config.pipelines.description(branches.audio, branches.audioValues)
        let bin = try pipeline.addBin(description: description, name: "relay-\(stream.mid)")
        var complete = false
        defer { if !complete { pipeline.remove(bin) } }
        let open = try bin.element(named: "open")
        let out = try bin.element(named: "out").staticPad("sink")
        let display = stream.feedDisplay ?? "", feed = stream.feedID
        let output = self.output
        var probes: [PadProbe] = []
        if isVideo {
            let mid = stream.mid
            let requests = KeyFrameRequests(ask: { [keyFrames] in keyFrames.ask(mid: mid) })
            output.keyFrames.withLock { $0 = requests }
            probes.append(try open.staticPad("src").attachRecordingReceiver(protection, VideoFormat.self, sink: try open.staticPad("sink"), hold: .none,
                                                                            stats: video, times: times, display: display, feedID: feed, openedBy: nil,
                                                                            onKeyMissing: nil, onDrop: { _ in requests.request() }))
            let push: @Sendable (UnsafeRawBufferPointer, UInt64?) -> Void = { au, at in
                let key = AnnexB.containsIDR(au)
                if key { requests.keyFrameArrived() }
                if output.pushVideo(au, isKey: key, clockTime: at) == .waitingForKeyFrame { requests.request() }
            }
            probes.append(Self.observe(out, clockTime: output.wantsClockTime, of: pipeline, push))
        } else {
            probes.append(try open.staticPad("src").attachRecordingReceiver(protection, AudioFormat.self, sink: try open.staticPad("sink"), hold: .none,
                                                                            stats: audio, times: times, display: display, feedID: feed, openedBy: nil,
                                                                            onKeyMissing: nil))
            probes.append(Self.observe(out, clockTime: output.wantsClockTime, of: pipeline) { output.pushAudio($0, clockTime: $1) })
        }
        guard bin.syncStateWithParent() else { throw BotError.pipelineFailed("the relay branch for mid \(stream.mid) did not start") }
        try pad.link(to: try bin.staticPad("sink"))
        complete = true
        output.keyFrames.withLock { $0 }?.request()
        return Branch(bin: bin, pad: pad, probes: probes)
    }

    /// The PeerConnection went (its pipeline stopped): its pads and branches are forgotten; the
    /// counters stay.
    func forgetPeer() {
        output.keyFrames.withLock { $0 = nil }
        state.withLock { $0 = Map() }
    }

    /// A stream the relay does not send still needs a sink, or it stalls the PeerConnection.
    private func discard(pad: Pad, mid: String, pipeline: Pipeline, _ m: inout Map) {
        guard m.discards[mid] == nil else { return }
        do { m.discards[mid] = try config.pipelines.discard(pad, mid: mid, in: pipeline) } catch { log.error("cannot discard stream \(mid): \(error)") }
    }
}
