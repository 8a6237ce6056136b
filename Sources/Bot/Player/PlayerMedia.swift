import FrameCrypto
import Foundation
import GStreamerKit
import Locking
import Synchronization
import Logging

/// The player's pipeline: which graph a source gets, its seal/gate probes, and how media
/// starts once the path to Janus is up.
extension Player {
    struct Media: Sendable {
        let pipeline: Pipeline
        let webrtc: WebRTCBin
        /// Seal, tap, end-of-stream and gate probes: they act as long as they are held.
        let probes: [PadProbe]
        /// Links of decoded pads to the converter (`dec` → `conv`), held as long as the pipeline.
        let links: [SignalConnection]
        /// EOS seen leaving the audio encoder: webrtcbin's sinks never post EOS on the bus.
        let endOfFile: AsyncStream<Void>
        /// Packets are dropped after the payloaders until the media path is up.
        let audioGate: Gate
        let videoGate: Gate?
        /// Where a keyframe is asked of the video encoder when the media path comes up.
        let videoEncoder: Pad?
        /// For files: where the restart and loop seeks go upstream.
        let pace: Pad?
        /// For files: the pacing elements, which get one ts-offset at the restart.
        let pacers: [Element]
        /// For chained Oggs: the first encoded frame waits here until the media path is up, so
        /// the file starts without being sought back (see `startMedia`).
        let hold: PadProbe?
        /// How many tracks must reach their end before the file has.
        let tracks: Int
        /// Where in the file the audio is (presentation times leaving the encoder): a player
        /// that rejoins goes on from there.
        let position: MediaTimes
        var hasVideo: Bool { videoGate != nil }
    }

    /// The pipeline for the source; `info` is what InputProbe found in a file.
    func makeMedia(_ found: InputProbe.Found?) throws(BotError) -> Media {
        do {
            let description = switch source {
            case .file(let file): try fileDescription(file, found ?? InputProbe.Found(info: MediaInfo.discover(file), chainedOgg: false))
            case .testPattern: try config.pipelines.description("play-test-pattern", config.protection.h264SendIntervals)
            case .live, .room: try liveDescription()
            }
            let pipeline = try Pipeline(description: description)
            var links: [SignalConnection] = []
            if let dec = try? pipeline.element(named: "dec"), let conv = try? pipeline.element(named: "conv") {
                links.append(dec.followDecodedPads("audio/", into: try conv.staticPad("sink")))
            }
            // One decoding thread: memory bounded by the source's picture size, not the cores.
            if let dec = try? pipeline.element(named: "dec") {
                links.append(dec.limitDecoderThreads(to: 1))
                // Files concatenated (MPEG-TS segments) restart their timestamps mid-file.
                links.append(dec.joinRestartedTimelines())
            }
            let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            try freshTURN.applied(to: config).configureICE(webrtc)
            let seal = try pipeline.element(named: "seal")
            let sealPad = try seal.staticPad("src")
            var probes = [sealPad.attachSender(config.protection, AudioFormat.self, stats: stats)]
            if let tap = config.frameTap {
                probes.append(try seal.staticPad("sink").addBufferObserver { tap(.beforeSeal, 0, $0) })
                probes.append(sealPad.addBufferObserver { tap(.afterSeal, 0, $0) })
            }
            let (endOfFile, ended) = AsyncStream.makeStream(of: Void.self)
            probes.append(sealPad.onEndOfStream { ended.yield() })
            let position = MediaTimes()
            var tracks = 1
            let (audioGate, audioGateProbe) = try pipeline.element(named: "pay").staticPad("src").addGate()
            // The position a next owner goes on from: only frames sent, not those encoded before
            // the start-of-file seek (dropped at the gate), which read as the file's first 0.3 s.
            let played = self.played
            probes.append(sealPad.addTimedBufferObserver { _, pts in
                guard let pts else { return }
                position.mark(pts)
                if audioGate.isOpen { played.mark(pts) }
            })
            probes.append(audioGateProbe)
            // The end is seen at `seal`; EOS into webrtcbin would end its bundle for both tracks.
            probes.append(try pipeline.element(named: "pay").staticPad("src").dropEndOfStream())
            var videoGate: Gate?, videoEncoder: Pad?
            // Fail closed: a video branch must pass a sealer; a pipeline with a video payloader
            // (`vpay`) but no `vseal` would send plaintext video.
            let vpay = try? pipeline.element(named: "vpay")
            if vpay != nil, (try? pipeline.element(named: "vseal")) == nil { throw GStreamerError.missingElement("vseal") }
            if let vseal = try? pipeline.element(named: "vseal") {
                let vsealPad = try vseal.staticPad("src")
                probes.append(vsealPad.attachSender(config.protection, VideoFormat.self, stats: videoStats))
                probes.append(vsealPad.onEndOfStream { ended.yield() })
                tracks += 1
                let (gate, probe) = try pipeline.element(named: "vpay").staticPad("src").addGate()
                videoGate = gate
                probes.append(try pipeline.element(named: "vpay").staticPad("src").dropEndOfStream())
                videoEncoder = try pipeline.element(named: "vpay").staticPad("sink")
                probes.append(probe)
            }
            let pacers = ["pace", "vpace"].compactMap { try? pipeline.element(named: $0) }
            let pace = try pacers.first?.staticPad("sink")
            if let live { probes += try attach(live, to: pipeline) }
            let hold = found?.chainedOgg == true ? try pipeline.element(named: "pay").staticPad("sink").addBufferHold() : nil
            return Media(pipeline: pipeline, webrtc: webrtc, probes: probes, links: links, endOfFile: endOfFile,
                         audioGate: audioGate, videoGate: videoGate, videoEncoder: videoEncoder, pace: pace, pacers: pacers,
                         hold: hold, tracks: tracks, position: position)
        } catch let e as GStreamerError {
            throw .media(e)
        } catch {
            throw BotError(error)
        }
    }

    /// The pipeline for a file: audio only, or video and audio transcoded to the envelope.
    private func fileDescription(_ file: String, _ found: InputProbe.Found) throws -> String {
        let info = found.info
        // A chained Ogg plays through play-audio too: it is held instead of sought (`hold`).
        if found.chainedOgg { return try config.pipelines.description("play-audio", ["file": file]) }
        guard let video = info.videoCaps else { return try config.pipelines.description("play-audio", ["file": file]) }
        guard info.hasAudio else { throw BotError.unplayable(file, "has video but no audio: ECall calls need audio") }
        if !transcodeVideo, RoomVideoCodec.acceptsAsIs(video) {
            config.logger.info("video \(capsString("profile", in: video) ?? "") H.264 level \(capsString("level", in: video) ?? "?"): sent as it is")
            return try config.pipelines.description("play-av-h264", config.protection.h264SendIntervals.merging(["file": file]) { $1 })
        }
        let size = envelope.fit(width: capsInt("width", in: video) ?? envelope.maxWidth, height: capsInt("height", in: video) ?? envelope.maxHeight)
        config.logger.info("video \(capsInt("width", in: video) ?? 0)x\(capsInt("height", in: video) ?? 0) → \(size.width)x\(size.height) H.264 ≤ \(envelope.maxFPS) fps")
        return try config.pipelines.description("play-av", config.protection.h264SendIntervals.merging([
            "file": file, "width": "\(size.width)", "height": "\(size.height)",
            "fps": "\(envelope.maxFPS)", "video_kbps": "\(envelope.kilobitsPerSecond)",
        ]) { $1 })
    }

    /// Starts media once the path is up: a file from its first sample (what was encoded while
    /// DTLS came up is dropped and the file sought back), a live source from now.
    func startMedia(_ media: Media, at position: Double = 0) -> Bool {
        guard let pace = media.pace else {
            media.audioGate.open()
            media.videoGate?.open()
            // Start on a keyframe: the one Janus asked for when this publisher came up was
            // encoded while the gate was still closed.
            media.videoEncoder?.requestKeyFrame()
            return true
        }
        if let hold = media.hold, position == 0, !loop {
            // Nothing was read past the first frame: pacing starts now and no seek is made (a
            // flushing seek into oggdemux's push mode, on a loaded machine, ended the file after
            // 6 frames or stopped it with not-linked).
            if let now = media.pipeline.runningTime {
                for pacer in media.pacers { try? pacer.set("ts-offset", String(Int64(now))) }
            }
            media.audioGate.open()
            hold.remove()
            return true
        }
        media.hold?.remove()
        // Every track is paced from 200 ms from now: one offset for all, so they stay together.
        if let now = media.pipeline.runningTime {
            for pacer in media.pacers { try? pacer.set("ts-offset", String(Int64(now) + 200_000_000)) }
        }
        media.audioGate.openAfterNextFlush()
        media.videoGate?.openAfterNextFlush()
        return pace.seekUpstream(to: position, flush: true, segment: loop)
    }
}

/// The file position a player has reached, read from any thread.
public final class PlayedPosition: Sendable {
    private let last = Locked<Double?>(nil)
    public init() {}
    func mark(_ seconds: Double) { last.withLock { $0 = seconds } }
    public var seconds: Double? { last.withLock { $0 } }
}
