import Bot
import FastPath
import FrameCrypto
import GStreamerKit
import Logging

extension PublisherBot {
    /// The frame path: each frame the fan-out takes is sealed here and handed to a `DirectTrack`
    /// (packetized, protected and sent in C) instead of being pushed through the payloaders,
    /// whose outlets are detached. Both tracks or neither: nil (logged) if one cannot be made,
    /// and the caller keeps the payloaders. Call once `direct` exists and before the gates
    /// open, so nothing a payloader made has been sent.
    func sendFrames(_ direct: DirectRTPSender, pipeline: Pipeline, replacing outlets: [(Outlet, FanOut)], log: Logger) -> [(FrameConsumer, FanOut)]? {
        let source = context.source
        var consumers: [(FrameConsumer, FanOut)] = []
        do throws(GStreamerError) {
            let audio = try DirectTrack(direct, payloader: pipeline.element(named: "pay"), video: false)
            if let fan = source.fanOut(.audio, for: index) {
                consumers.append((Self.consumer(audio, seal: protection.senderTransform(AudioFormat.self, stats: audioStats)), fan))
            }
            if source.hasVideo {
                let video = try DirectTrack(direct, payloader: pipeline.element(named: "vpay"), video: true)
                if let fan = source.fanOut(.video, for: index) {
                    consumers.append((Self.consumer(video, seal: protection.senderTransform(VideoFormat.self, stats: videoStats)), fan))
                }
            }
        } catch {
            log.warning("load: \(display) sends through its payloaders: \(error)")
            return nil
        }
        for (outlet, fan) in outlets { fan.detach(outlet) }
        for (consumer, fan) in consumers { fan.attach(consumer) }
        return consumers
    }

    /// Seals each frame into the fan-out's scratch memory and sends it; a frame the sealer
    /// refuses (no key) is not sent at all.
    private static func consumer(_ track: DirectTrack, seal: any FrameTransform) -> FrameConsumer {
        FrameConsumer { frame, runningTime, scratch in
            let out = scratch.bytes(seal.outputCapacity(for: frame))
            guard let n = seal.transform(frame, into: out), n <= out.count else { return }
            track.send(UnsafeRawBufferPointer(rebasing: out[0..<n]), runningTime: runningTime)
        }
    }
}
