import Foundation
package import GStreamerKit
public import Janus
package import Logging

/// Why a participant's PeerConnection or Janus handle went away.
public enum PeerLoss: Sendable, Equatable, CustomStringConvertible {
    /// Janus hung the PeerConnection up (`hangup`), with its reason.
    case hungUp(String)
    /// The handle was detached or the session ended (the WebSocket closed, Janus went away).
    case sessionEnded
    /// ICE found no working candidate pair.
    case iceFailed
    /// Janus stopped receiving our media and did not get it back within the media-loss timeout.
    case mediaLost
    /// A peer that answered keepalive pings left two in a row unanswered (`Keepalive`).
    case keepaliveLost
    /// Only relayed candidates were allowed and the TURN servers gave none: credentials
    /// refused, or the TURN server unreachable; with what is known of why (a `turns:`
    /// server's certificate that did not verify), else nil.
    case turnFailed(String?)

    /// Short, for load reports and logs.
    public var description: String {
        switch self {
        case .hungUp(let reason): "Janus hung up: \(reason)"
        case .sessionEnded: "Janus session ended"
        case .iceFailed: "ICE failed"
        case .mediaLost: "Janus stopped receiving our media"
        case .keepaliveLost: "two keepalive pings went unanswered"
        case .turnFailed(let why): why ?? Self.turnText
        }
    }

    /// As the error that ends a one-job command.
    public var error: BotError {
        switch self {
        case .hungUp(let reason): .negotiation("Janus hung up: \(reason)")
        case .sessionEnded: .janus(.disconnected)
        case .iceFailed: .negotiation("ICE failed: no candidate pair works")
        case .mediaLost: .negotiation("Janus stopped receiving our media (the path to it is lost)")
        case .keepaliveLost: .negotiation("two keepalive pings went unanswered (the path to Janus is lost)")
        case .turnFailed(let why): .negotiation(why ?? Self.turnText)
        }
    }

    static let turnText = "the TURN server gave no relay candidate: check the TURN credentials (--turn-username/--turn-password, the credentials or secret file) and that the TURN server is reachable"
}

/// What a participant's PeerConnection and its Janus handle report, merged in arrival order.
public enum PeerEvent: Sendable {
    /// webrtcbin wants an offer (a publisher's first RTP caps reached it).
    case negotiationNeeded
    /// webrtcbin's ICE connection state (`new`, `checking`, `connected`, `completed`, `failed` …).
    case ice(String)
    /// webrtcbin's connection state (ICE and DTLS together: `connected` once DTLS is done).
    case connection(String)
    /// Janus: the PeerConnection is up (ICE and DTLS, `webrtcup`).
    case mediaUp
    /// A VideoRoom event on the handle (e.g. a subscription's `updated` offer).
    case plugin(VideoRoomEvent)
    /// Janus's `media` event: it started or stopped receiving our audio or video.
    case receiving(type: String, Bool)
    /// The connection is gone; nothing more follows.
    case lost(PeerLoss)
}

/// Carries ICE between one webrtcbin and one Janus handle, both ways, and merges what both
/// report into one stream of `PeerEvent`s. The one copy of this loop: publishers and
/// subscribers of every command use it.
package struct PeerLink: Sendable {
    let webrtc: WebRTCBin
    let handle: JanusHandle
    let logger: Logger

    package init(webrtc: WebRTCBin, handle: JanusHandle, logger: Logger) {
        self.webrtc = webrtc
        self.handle = handle
        self.logger = logger
    }

    /// Starts following both sides; the events end when the returned tasks are cancelled or
    /// after a `.lost`. Local candidates go to Janus (`trickle`), remote ones to webrtcbin.
    package func follow() -> (events: AsyncStream<PeerEvent>, tasks: [Task<Void, Never>]) {
        let (events, sink) = AsyncStream.makeStream(of: PeerEvent.self)
        let webrtc = self.webrtc, handle = self.handle, logger = self.logger
        let local = Task {
            var relays = 0
            for await event in webrtc.events {
                switch event {
                case .negotiationNeeded:
                    sink.yield(.negotiationNeeded)
                case .iceCandidate(let mline, let candidate):
                    if candidate.contains(" typ relay") { relays += 1 }
                    do { try await handle.trickle(mline: mline, candidate: candidate) } catch {
                        logger.warning("trickle to Janus failed: \(error)")
                    }
                case .iceGatheringState("complete"):
                    try? await handle.trickleCompleted()
                    // libnice says nothing of a refused TURN allocation: no relay candidate is the sign.
                    let turn = webrtc.turnSetting
                    if turn.servers > 0, relays == 0 {
                        logger.error("\(PeerLoss.turnText)")
                        if turn.relayOnly { sink.yield(.lost(.turnFailed(nil))) }
                    }
                case .iceConnectionState(let s):
                    logger.debug("ICE \(s)")
                    sink.yield(.ice(s))
                    if s == "failed" { sink.yield(.lost(.iceFailed)) }
                case .connectionState(let s):
                    sink.yield(.connection(s))
                default:
                    break
                }
            }
        }
        let remote = Task {
            for await event in handle.events {
                switch event {
                // An empty candidate tells webrtcbin the remote side finished gathering.
                case .trickle(let mline, let candidate): webrtc.addIceCandidate(mline: mline, candidate: candidate ?? "")
                case .webrtcUp: sink.yield(.mediaUp)
                case .hangup(let reason): sink.yield(.lost(.hungUp(reason)))
                case .detached: sink.yield(.lost(.sessionEnded))
                case .plugin(let data, let jsep): sink.yield(.plugin(VideoRoomEvent(data: data, jsep: jsep)))
                case .media(let type, let receiving): sink.yield(.receiving(type: type, receiving))
                default: break
                }
            }
            // The handle's events end when the session does: unless we are stopping, Janus went away.
            if !Task.isCancelled { sink.yield(.lost(.sessionEnded)) }
        }
        return (events, [local, remote])
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
    /// m-lines Janus made inactive stay receiving in webrtcbin (`RecycledMLines`).
    package func answer(_ offer: JSEP) async throws(BotError) {
        do {
            let held = RecycledMLines.held(offer: offer.sdp)
            try await webrtc.setRemoteDescription(SessionDescription(kind: .offer, sdp: held.sdp))
            let answer = try await webrtc.createAnswer().dtlsServer(offer: held.sdp)
            try await webrtc.setLocalDescription(answer)
            try await VideoRoom.start(handle, answer: JSEP(type: "answer", sdp: RecycledMLines.restored(answer: answer.sdp, mids: held.mids)))
        } catch {
            throw BotError(error)
        }
    }
}

extension SessionDescription {
    /// The answer with us as the DTLS server (`a=setup:passive`) where the offer let us choose
    /// (`actpass`). As client (webrtcbin's choice) our ClientHello often reaches Janus before its
    /// own ICE check has selected a pair; Janus drops it ("handshake not started yet") and
    /// OpenSSL sends it again only after 1 s: that second was the p95 of a subscriber's join.
    /// As server we wait for Janus's ClientHello, which it sends once it is ready.
    func dtlsServer(offer: String) -> SessionDescription {
        guard kind == .answer, offer.contains("a=setup:actpass") else { return self }
        return SessionDescription(kind: .answer, sdp: sdp.replacingOccurrences(of: "a=setup:active", with: "a=setup:passive"))
    }
}
