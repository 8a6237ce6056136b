import Foundation
@testable import Janus
import Testing

@Suite struct JanusMessageTests {
    func decode(_ text: String) throws -> JanusMessage {
        try JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8))
    }

    @Test func requestEncodingUsesJanusFieldNames() throws {
        var r = JanusRequest("message", transaction: "t9", sessionID: 11, handleID: 22)
        r.body = ["request": "configure", "audio": true]
        r.jsep = JSEP(type: "offer", sdp: "v=0\r\n")
        r.apisecret = "s3cret"
        let json = try JSONDecoder().decode(JSON.self, from: JSONEncoder().encode(r))
        #expect(json["janus"] == "message")
        #expect(json["transaction"] == "t9")
        #expect(json["session_id"]?.int == 11)
        #expect(json["handle_id"]?.int == 22)
        #expect(json["body"]?["request"] == "configure")
        #expect(json["jsep"]?["type"] == "offer")
        #expect(json["apisecret"] == "s3cret")
        #expect(json["token"] == nil, "absent options are not sent")
    }

    /// Found by FuzzJanus: every level of nesting made the next one cost more (four scalar
    /// types were tried, and failed, before an array or object), so a 1 KB message of nested
    /// arrays took a second to decode, and one of 4 MiB would hold the session for hours.
    /// Janus nests a few levels; deeper than `JSON.maxDepth` is refused.
    @Test func deepNestingIsRefusedQuickly() throws {
        func message(data: String) -> String { #"{"janus": "event", "data": "# + data + "}" }
        func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        var inner = try #require(try decode(message(data: nested(JSON.maxDepth))).data)
        for _ in 1..<JSON.maxDepth { inner = try #require(inner.array?.first) }
        #expect(inner == [])
        #expect(throws: DecodingError.self) { try decode(message(data: nested(JSON.maxDepth + 1))) }
        // Eight arrays 500 deep (JSONDecoder itself allows 512): 4 KB.
        let hostile = message(data: "[" + Array(repeating: nested(500), count: 8).joined(separator: ", ") + "]")
        let start = ContinuousClock.now
        #expect(throws: DecodingError.self) { try decode(hostile) }
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func successCarriesIDs() throws {
        let m = try decode(Captured.createSuccess)
        #expect(m.janus == "success" && m.transaction == "a2" && m.data?["id"]?.int == 3551456549778141)
        let created = try decode(Captured.roomCreated)
        #expect(created.plugindata?.data["room"]?.int == 4250)
        #expect(created.pluginError == nil)
    }

    @Test func coreErrorsDecode() throws {
        #expect(try decode(Captured.noSuchSession).error == .init(code: 458, reason: "No such session 123"))
        #expect(try decode(Captured.unknownRequest).error?.code == 453)
    }

    @Test func pluginErrorIsRecognised() throws {
        let m = try decode(Captured.noSuchRoom)
        #expect(m.pluginError == .plugin(code: 426, reason: "No such room (4244)"))
        #expect(JanusError.plugin(code: 426, reason: "x").description.contains("no such room"))
    }

    @Test func joinedAndPublishers() throws {
        let joined = try decode(Captured.joined).plugindata!.data
        #expect(joined["id"]?.int == 6957124351182499)
        #expect(joined["private_id"]?.int == 2806420216)
        guard case .publishers(let list) = VideoRoomEvent(data: try decode(Captured.publisherAppeared).plugindata!.data, jsep: nil) else {
            Issue.record("not a publishers event"); return
        }
        #expect(list.count == 1)
        #expect(list[0].id == 7027339154702459 && list[0].userID == "42" && list[0].displayName == "Alice")
        #expect(list[0].streams == [.init(type: "audio", mid: "audio0", codec: "opus")])
    }

    @Test func attachedCarriesStreamsAndOffer() throws {
        let m = try decode(Captured.attached)
        guard case .updated(let streams, let offer) = VideoRoomEvent(data: m.plugindata!.data, jsep: m.jsep) else {
            Issue.record("not an update"); return
        }
        #expect(streams == [SubscribedStream(mid: "0", feedID: 7027339154702459, feedDisplay: "42:Alice", type: "audio", active: true)])
        #expect(offer?.type == "offer" && offer?.sdp.hasPrefix("v=0\r\n") == true)
    }

    @Test func leavingOkIsNotAFeedLeaving() throws {
        if case .leaving = VideoRoomEvent(data: try decode(Captured.leavingOK).plugindata!.data, jsep: nil) {
            Issue.record("our own leave confirmation must not look like a publisher leaving")
        }
        guard case .unpublished(let id) = VideoRoomEvent(data: try decode(Captured.unpublished).plugindata!.data, jsep: nil) else {
            Issue.record("not unpublished"); return
        }
        #expect(id == 7027339154702459)
    }

    @Test func handleEventsFromCaptures() throws {
        guard case .trickle(0, let c?) = JanusSession.handleEvent(from: try decode(Captured.trickle)) else { Issue.record("trickle"); return }
        #expect(c.hasPrefix("candidate:1 1 udp"))
        guard case .trickle(_, nil) = JanusSession.handleEvent(from: try decode(Captured.trickleCompleted)) else { Issue.record("completed"); return }
        guard case .webrtcUp = JanusSession.handleEvent(from: try decode(Captured.webrtcUp)) else { Issue.record("webrtcup"); return }
        #expect(JanusSession.handleEvent(from: try decode(Captured.ackAfterEvent)) == nil)
    }

    @Test func malformedInputThrowsInsteadOfCrashing() {
        for bad in ["", "{", "[]", #"{"transaction": "x"}"#, #"{"janus": 5}"#, #"{"janus": "event", "plugindata": 3}"#] {
            #expect(throws: (any Error).self) { try decode(bad) }
        }
    }

    @Test func idsAsStringsOrNumbers() {
        #expect(JSON.string("123").int == 123)
        #expect(JSON.double(5).int == 5)
        #expect(JSON.double(5.5).int == nil)
    }
}
