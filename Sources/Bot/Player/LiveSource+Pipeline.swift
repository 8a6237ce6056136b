import Foundation
import GStreamerKit
import Locking
import Logging
import Synchronization

/// One connection's pipeline: the source element for the URL in front of live-source.pipeline,
/// its frames handed to `sink`, and at the video's first caps the choice between passing the
/// H.264 through and encoding it once.
extension LiveSource {
    func makePipeline(_ setup: Setup, _ log: Logger) throws(BotError) -> (Pipeline, [PadProbe]) {
        let envelope = setup.envelope
        let body = try setup.library.description("live-source", ["fps": "\(envelope.maxFPS)", "video_kbps": "\(envelope.kilobitsPerSecond)"])
        let (factory, property) = address.element
        do {
            let pipeline = try Pipeline(description: "\(factory) name=src ! \(body)")
            // A property, never the description: the URL is the user's text.
            try pipeline.element(named: "src").set(property, address.url)
            let sink = self.sink
            var probes: [PadProbe] = []
            probes.append(try pipeline.element(named: "aout").staticPad("sink").addRunningTimeObserver { [self] bytes, running, _ in
                arrived(video: false, setup, log)
                sink.push(bytes, running: running, key: true, video: false)
            })
            for name in ["vout_pass", "vout_enc"] {
                probes.append(try pipeline.element(named: name).staticPad("sink").addRunningTimeObserver { [self] bytes, running, key in
                    arrived(video: true, setup, log)
                    sink.push(bytes, running: running, key: key, video: true)
                })
            }
            let pass = try pipeline.element(named: "vpass"), encode = try pipeline.element(named: "venc")
            let size = try pipeline.element(named: "vsize"), x264 = try pipeline.element(named: "x264").staticPad("src")
            let decided = Atomic<Bool>(false)
            probes.append(try pipeline.element(named: "vparse").staticPad("src").beforeCaps { [self] caps in
                // The first caps decide for the whole connection (before its first frame).
                guard decided.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
                let asIs = !setup.transcode && RoomVideoCodec.acceptsAsIs(caps)
                let w = capsInt("width", in: caps) ?? envelope.maxWidth, h = capsInt("height", in: caps) ?? envelope.maxHeight
                let described = "H.264 \(capsString("profile", in: caps) ?? "?") level \(capsString("level", in: caps) ?? "?") \(w)x\(h)"
                if asIs {
                    try? pass.set("drop", false)
                    log.info("source video \(described): sent as it is (not re-encoded)")
                } else {
                    let fit = envelope.fit(width: w, height: h)
                    try? size.set("caps", "video/x-raw,format=I420,width=\(fit.width),height=\(fit.height),pixel-aspect-ratio=1/1")
                    encoder.withLock { $0 = x264 }
                    try? encode.set("drop", false)
                    log.info("source video \(described) → \(fit.width)x\(fit.height) H.264 ≤ \(envelope.maxFPS) fps: encoded once")
                }
                noteVideo(passthrough: asIs)
            })
            return (pipeline, probes)
        } catch {
            throw .media(error)
        }
    }
}
