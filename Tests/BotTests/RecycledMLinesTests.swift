import Foundation
import Testing
@testable import Bot

/// `RecycledMLines` on an offer shaped like Janus 1.1.2's multistream subscription update after
/// a publisher left (its m-lines 0 and 1 inactive, m-line 2 still sending, the data channel):
/// no I/O.
@Suite struct RecycledMLinesTests {
    static let offer = [
        "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=VideoRoom 1234", "t=0 0", "a=group:BUNDLE 0 1 2 3",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 127.0.0.1", "a=inactive", "a=mid:0", "a=rtpmap:111 opus/48000/2",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 127.0.0.1", "a=inactive", "a=mid:1", "a=rtpmap:96 H264/90000",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 127.0.0.1", "a=sendonly", "a=mid:2", "a=rtpmap:111 opus/48000/2",
        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 127.0.0.1", "a=inactive", "a=mid:3",
    ].joined(separator: "\r\n") + "\r\n"

    @Test func inactiveAudioAndVideoMLinesAreHandedToWebRTCBinAsSending() {
        let held = RecycledMLines.held(offer: Self.offer)
        #expect(held.mids == ["0", "1"])
        #expect(!held.sdp.contains("a=inactive\r\na=mid:0") && !held.sdp.contains("a=inactive\r\na=mid:1"))
        #expect(held.sdp.components(separatedBy: "a=sendonly").count - 1 == 3)
        #expect(held.sdp.contains("a=inactive\r\na=mid:3"), "the data channel's m-line is left alone")
        #expect(held.sdp.hasSuffix("\r\n") && !held.sdp.contains("\r\n\r\n"), "CRLF line endings kept")
        // Everything else is as it was, line by line.
        let before = Self.offer.split(separator: "\r\n"), after = held.sdp.split(separator: "\r\n")
        #expect(before.count == after.count)
        #expect(zip(before, after).filter { $0 != $1 }.count == 2)
    }

    @Test func anOfferWithNothingInactiveIsUnchanged() {
        let offer = Self.offer.replacingOccurrences(of: "a=inactive\r\na=mid:0", with: "a=sendonly\r\na=mid:0")
            .replacingOccurrences(of: "a=inactive\r\na=mid:1", with: "a=sendonly\r\na=mid:1")
        let held = RecycledMLines.held(offer: offer)
        #expect(held.mids.isEmpty && held.sdp == offer)
    }

    @Test func theAnswerToJanusSaysInactiveWhereItsOfferDid() {
        let answer = [
            "v=0", "o=- 5 2 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE 0 1 2 3",
            "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:0", "a=recvonly",
            "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=mid:1", "a=recvonly",
            "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:2", "a=recvonly",
            "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "a=mid:3",
        ].joined(separator: "\r\n") + "\r\n"
        let restored = RecycledMLines.restored(answer: answer, mids: ["0", "1"])
        #expect(restored.contains("a=mid:0\r\na=inactive") && restored.contains("a=mid:1\r\na=inactive"))
        #expect(restored.contains("a=mid:2\r\na=recvonly"), "a feed still sending is still received")
        #expect(RecycledMLines.restored(answer: answer, mids: []) == answer)
    }
}
