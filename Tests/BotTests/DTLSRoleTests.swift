@testable import Bot
import Foundation
import GStreamerKit
import Testing

/// A subscriber answers Janus's offer as the DTLS server where the offer lets it choose: as
/// client its first ClientHello often reached Janus before Janus's ICE had selected a pair, was
/// dropped, and came again 1 s later (the p95 of a subscriber's join, `make bench-load`).
@Suite struct DTLSRoleTests {
    let answer = SessionDescription(kind: .answer, sdp: "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=setup:active\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=setup:active\r\n")

    @Test func actpassOfferGetsAPassiveAnswer() {
        let sdp = answer.dtlsServer(offer: "v=0\r\na=setup:actpass\r\n").sdp
        #expect(sdp.components(separatedBy: "a=setup:passive").count == 3)
        #expect(!sdp.contains("a=setup:active"))
    }

    @Test func anOfferThatChoseKeepsTheAnswer() {
        // An offer saying passive leaves us no choice: we must be the client.
        #expect(answer.dtlsServer(offer: "v=0\r\na=setup:passive\r\n") == answer)
        let offer = SessionDescription(kind: .offer, sdp: "a=setup:active\r\n")
        #expect(offer.dtlsServer(offer: "a=setup:actpass\r\n") == offer)
    }
}
