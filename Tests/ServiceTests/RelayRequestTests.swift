import Foundation
@testable import Service
import Testing

/// A relay request's directions (`to`, `from`, `toRoom`), parsed with no I/O: one direction per
/// job, and an encrypted call never bridged into a room without a key, whether the call is
/// encrypted by its key or by keys per participant.
@Suite struct RelayRequestTests {
    static let callKey = String(repeating: "4e", count: 32)

    static func refusal(_ object: [String: Any]) -> RequestProblem? {
        var o = object
        o["room"] = o["room"] ?? 1
        do { _ = try JobSpec.parse(try JSONSerialization.data(withJSONObject: o), kind: .relay); return nil } catch let e as RequestProblem { return e } catch {
            return RequestProblem(status: 0, message: "\(error)")
        }
    }

    @Test func anEncryptedCallIsNeverBridgedIntoARoomWithoutAKey() {
        let plainRoom: [String: Any] = ["room": 2, "key": ["none": true]]
        let ecall = Self.refusal(["key": ["hex": Self.callKey], "toRoom": plainRoom])
        #expect(ecall?.status == 400 && ecall?.message.hasPrefix("toRoom.key") == true, "\(String(describing: ecall))")
        // FrameCryptor with keys per participant only (no `key`): encrypted all the same.
        let perParticipant = Self.refusal(["format": ["frame": "framecryptor", "ratchetSalt": "PQSRTCFrameEncryptionSalt"], "keys": [["participant": "7", "index": 0, "key": "ab" + Self.callKey]],
                                           "toRoom": plainRoom])
        #expect(perParticipant?.status == 400 && perParticipant?.message.hasPrefix("toRoom.key") == true, "\(String(describing: perParticipant))")
        #expect(Self.refusal(["key": ["none": true], "toRoom": plainRoom]) == nil, "a plain room into a plain room")
        #expect(Self.refusal(["key": ["hex": Self.callKey], "toRoom": ["room": 2, "key": ["hex": Self.callKey]]]) == nil)
        let file = Self.refusal(["key": ["hex": Self.callKey], "toRoom": ["room": 2, "key": ["file": "/etc/k"]]])
        #expect(file?.message.hasPrefix("toRoom.key") == true, "\(String(describing: file))")
    }

    @Test func oneDirectionPerJob() {
        let key: [String: Any] = ["hex": Self.callKey]
        let both = Self.refusal(["key": key, "from": "rtmp://127.0.0.1/live/s", "to": "rtmp://127.0.0.1/live/t"])
        #expect(both?.message.contains("not both") == true, "\(String(describing: both))")
        let fromWithParticipant = Self.refusal(["key": key, "from": "srt://127.0.0.1:9000", "participant": "7"])
        #expect(fromWithParticipant?.message.hasPrefix("participant") == true, "\(String(describing: fromWithParticipant))")
        let toAndRoom = Self.refusal(["key": key, "to": "rtmp://127.0.0.1/live/t", "toRoom": ["room": 2, "key": key]])
        #expect(toAndRoom?.message.contains("not both") == true, "\(String(describing: toAndRoom))")
        let rtpWhole = Self.refusal(["key": key, "to": "rtp://127.0.0.1:5004"])
        #expect(rtpWhole?.message.hasPrefix("participant") == true, "rtp carries one participant: \(String(describing: rtpWhole))")
        let layoutWithOne = Self.refusal(["key": key, "to": "rtmp://127.0.0.1/live/t", "participant": "7", "layout": "grid"])
        #expect(layoutWithOne?.message.hasPrefix("layout") == true, "\(String(describing: layoutWithOne))")
        #expect(Self.refusal(["key": key, "to": "rtmp://127.0.0.1/live/t", "layout": "speaker", "size": "640x360"]) == nil)
        #expect(Self.refusal(["key": key, "to": "rtmp://127.0.0.1/live/t", "layout": "mosaic"])?.message.hasPrefix("layout") == true)
    }
}
