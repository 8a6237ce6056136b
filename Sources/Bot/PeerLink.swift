package import GStreamerKit
package import Janus
package import Logging

/// Carries ICE between one webrtcbin and one Janus handle, both ways, and reports the
/// connection state, until the handle's events end.
package struct PeerLink: Sendable {
    let webrtc: WebRTCBin
    let handle: JanusHandle
    let logger: Logger

    package init(webrtc: WebRTCBin, handle: JanusHandle, logger: Logger) {
        self.webrtc = webrtc
        self.handle = handle
        self.logger = logger
    }

    /// Local candidates → `trickle`, negotiation requests and ICE states → the callbacks;
    /// runs until webrtcbin's events end or the task is cancelled.
    package func pump(onNegotiationNeeded: @escaping @Sendable () -> Void = {}, onState: @escaping @Sendable (String) -> Void = { _ in }) async {
        for await event in webrtc.events {
            switch event {
            case .negotiationNeeded:
                onNegotiationNeeded()
            case .iceCandidate(let mline, let candidate):
                do { try await handle.trickle(mline: mline, candidate: candidate) } catch {
                    logger.warning("trickle to Janus failed: \(error)")
                }
            case .iceGatheringState("complete"):
                try? await handle.trickleCompleted()
            case .iceConnectionState(let s):
                logger.debug("ICE \(s)")
                onState(s)
            default:
                break
            }
        }
    }

    /// A remote candidate from Janus → webrtcbin.
    package func addRemote(mline: Int, candidate: String?) {
        // An empty candidate tells webrtcbin the remote side finished gathering.
        webrtc.addIceCandidate(mline: mline, candidate: candidate ?? "")
    }

    /// Offer → configure → answer, for a publisher.
    package func publish(video: Bool) async throws(BotError) {
        do {
            let offer = try await webrtc.createOffer()
            try await webrtc.setLocalDescription(offer)
            let answer = try await VideoRoom.publish(handle, offer: JSEP(type: "offer", sdp: offer.sdp), video: video)
            try await webrtc.setRemoteDescription(SessionDescription(kind: .answer, sdp: answer.sdp))
        } catch {
            throw BotError(error)
        }
    }

    /// Janus's offer → answer → `start`, for a subscriber (first join and every update).
    package func answer(_ offer: JSEP) async throws(BotError) {
        do {
            try await webrtc.setRemoteDescription(SessionDescription(kind: .offer, sdp: offer.sdp))
            let answer = try await webrtc.createAnswer()
            try await webrtc.setLocalDescription(answer)
            try await VideoRoom.start(handle, answer: JSEP(type: "answer", sdp: answer.sdp))
        } catch {
            throw BotError(error)
        }
    }
}
