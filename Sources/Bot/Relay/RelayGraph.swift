import FrameCrypto
import Foundation
import GStreamerKit
import Synchronization

/// One try at a destination: the output pipeline (pipelines/relay-*.pipeline) with an `appsrc`
/// per track the participant sends. Made anew after every failure, so a server that was down
/// or dropped the connection gets a fresh muxer header and starts on a keyframe.
final class RelayGraph: Sendable {
    let pipeline: Pipeline
    let bus: AsyncStream<BusMessage>
    let number: Int
    private let audio: AppSource?
    private let video: AppSource?
    /// Video is fed from its first keyframe on (a muxer or player cannot start elsewhere).
    private let videoStarted = Atomic<Bool>(false)
    /// On the network sinks' pads: how long each buffer was in the graph.
    private let delayProbes: [PadProbe]
    /// What the appsrcs took and what they dropped (a slow destination).
    private let audioFlow: OutputFlow?
    private let videoFlow: OutputFlow?

    /// Builds and starts the graph; blocks while a sink connects (srtsink): call off the pool.
    init(destination: RelayDestination, tracks: RelayTracks, library: PipelineLibrary, number: Int, delays: RelayDelays) throws(BotError) {
        self.number = number
        let values = destination.pipelineValues(attempt: number)
        var parts: [String] = []
        switch destination.kind {
        case .rtmp, .srt, .hls:
            if destination.kind == .hls { try Self.privateFolder(destination) }
            parts.append(try library.description("relay-\(destination.kind.rawValue)", values))
            // hlssink2 takes each track on a pad of its name; the muxers find theirs by caps.
            let pad = { (track: String) in destination.kind == .hls ? track : "" }
            // The composite's audio is PCM, mixed: encoded here once (relay-pcm-audio).
            let audio = tracks.pcmAudio ? "relay-pcm-audio" : "relay-aac-audio"
            if tracks.audio { parts += [try library.description(audio, values), "audio_out. ! mux.\(pad("audio"))"] }
            if tracks.video { parts += [try library.description("relay-h264-video", values), "video_out. ! mux.\(pad("video"))"] }
        case .rtp, .srtp:
            let name = destination.kind == .srtp ? "relay-srtp" : "relay-rtp"
            if tracks.audio { parts.append(try library.description("\(name)-audio", values)) }
            if tracks.video { parts.append(try library.description("\(name)-video", values)) }
        }
        do {
            pipeline = try Pipeline(description: parts.joined(separator: " "))
            audio = tracks.audio ? try AppSource(named: "audio", in: pipeline) : nil
            video = tracks.video ? try AppSource(named: "video", in: pipeline) : nil
            delayProbes = try Self.observeDelays(pipeline, delays)
            if let audio { audioFlow = try OutputFlow(audio) } else { audioFlow = nil }
            if let video { videoFlow = try OutputFlow(video) } else { videoFlow = nil }
        } catch { throw .media(error) }
        bus = pipeline.bus.messages()
        do { try pipeline.setState(.playing) } catch {
            pipeline.setStateQuietly(.null)
            throw .media(error)
        }
    }

    /// One opened Opus frame (or the composite's mixed PCM); false if the graph did not take it.
    func pushAudio(_ frame: UnsafeRawBufferPointer) -> Bool {
        guard let audio, audio.push(frame, pts: Self.noTime) else { return false }
        audioFlow?.took()
        return true
    }

    /// One opened access unit (Annex-B). `.waitingForKeyFrame` until the first keyframe.
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> PushResult {
        guard let video else { return .refused }
        if !videoStarted.load(ordering: .acquiring) {
            guard isKey else { return .waitingForKeyFrame }
            videoStarted.store(true, ordering: .releasing)
        }
        guard video.push(au, pts: Self.noTime, delta: !isKey) else { return .refused }
        videoFlow?.took()
        return .sent
    }

    /// Frames the appsrcs dropped since the last look (one caller at a time): the destination
    /// slower than the stream, or a queue thrown away when the graph stopped.
    func newlyDropped() -> (audio: Int, video: Int) {
        (audioFlow?.newlyDropped() ?? 0, videoFlow?.newlyDropped() ?? 0)
    }

    enum PushResult { case sent, waitingForKeyFrame, refused }

    /// No more frames: the muxer writes its end and the sink closes the stream.
    func endOfStream() {
        audio?.endOfStream()
        video?.endOfStream()
    }

    /// HLS writes the call, decrypted, to this machine's disk: into a folder only this user can
    /// read (made 0700; an existing one others may read or write is refused), each file 0600
    /// (the relay command's umask).
    private static func privateFolder(_ destination: RelayDestination) throws(BotError) {
        let path = destination.url
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw .output("hls:\(path): cannot create the folder (\(String(cString: strerror(errno))))")
        }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw .output("hls:\(path) is not a folder") }
        guard info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw .output("hls:\(path) may be read by others: the segments are the call, decrypted; give a folder only you can read (chmod 700)")
        }
    }

    /// The network sinks (`sink`, or RTP's `audio_sink`/`video_sink`; HLS has none: its segments
    /// wait for their end anyway): each buffer's running time is its push (the appsrc's
    /// do-timestamp), so now minus it is how long the graph held it.
    private static func observeDelays(_ pipeline: Pipeline, _ delays: RelayDelays) throws(GStreamerError) -> [PadProbe] {
        var probes: [PadProbe] = []
        for name in ["sink", "audio_sink", "video_sink"] {
            guard let sink = try? pipeline.element(named: name) else { continue }
            probes.append(try sink.staticPad("sink").addRunningTimeObserver { [weak pipeline] _, running, _ in
                guard let running, let now = pipeline?.runningTime else { return }
                delays.record(nanoseconds: Int64(now) - Int64(running))
            })
        }
        return probes
    }

    /// GST_CLOCK_TIME_NONE: the appsrc stamps each frame with its arrival (do-timestamp).
    private static let noTime = UInt64.max
}

/// Which tracks the relayed participant sends (the output graph has a branch for each).
struct RelayTracks: Sendable, Equatable {
    var audio: Bool
    var video: Bool
    /// The audio is PCM (48 kHz stereo S16LE: the composite's mix), not Opus.
    var pcmAudio = false
}
