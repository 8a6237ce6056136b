import FrameCrypto
import Testing

/// The key feed's lines (`--key-feed`, serve's `POST …/keys`): what a host app hands in, and
/// every way a line can be wrong, each refused with a message that never holds the key.
@Suite struct KeyFeedLineTests {
    @Test func setKeyForAParticipant() throws {
        let line = try KeyFeedLine.parse(#"{"participant": "alice", "index": 1, "key": "00112233"}"#)
        #expect(line == .set(participant: "alice", index: 1, material: try KeyMaterial(hex: "00112233")))
    }

    @Test func sharedKeyWithoutParticipant() throws {
        #expect(try KeyFeedLine.parse(#"{"index": 0, "key": "ff"}"#) == .set(participant: nil, index: 0, material: try KeyMaterial([0xFF])))
    }

    @Test func ratchet() throws {
        #expect(try KeyFeedLine.parse(#"{"participant": "bob", "index": 3, "ratchet": true}"#) == .ratchet(participant: "bob", index: 3))
    }

    @Test(arguments: [
        ("", KeyFeedError.notAnObject),
        ("[1]", .notAnObject),
        (#"{"index": 0}"#, .neitherKeyNorRatchet),
        (#"{"index": 0, "key": "00", "ratchet": true}"#, .neitherKeyNorRatchet),
        (#"{"index": 0, "ratchet": false}"#, .neitherKeyNorRatchet),
        (#"{"index": -1, "key": "00"}"#, .badIndex),
        (#"{"index": 1.5, "key": "00"}"#, .badIndex),
        (#"{"index": true, "key": "00"}"#, .badIndex),
        (#"{"index": "1", "key": "00"}"#, .badIndex),
        (#"{"index": 0, "key": "0"}"#, .badKey),
        (#"{"index": 0, "key": "zz"}"#, .badKey),
        (#"{"index": 0, "key": ""}"#, .badKey),
        (#"{"participant": "", "index": 0, "key": "00"}"#, .badParticipant),
        (#"{"participant": 7, "index": 0, "key": "00"}"#, .badParticipant),
        (#"{"index": 0, "key": "00", "colour": "red"}"#, .unknownField("colour")),
    ])
    func refused(_ text: String, _ error: KeyFeedError) {
        #expect(throws: error) { try KeyFeedLine.parse(text) }
    }

    @Test func overlongLineRefusedUnread() {
        let line = #"{"index": 0, "key": ""# + String(repeating: "ab", count: 3000) + #""}"#
        #expect(throws: KeyFeedError.tooLong) { try KeyFeedLine.parse(line) }
    }

    @Test func messagesNeverHoldTheKey() {
        let secret = "deadbeefcafe0123"
        for text in [#"{"index": -1, "key": "\#(secret)"}"#, #"{"index": 0, "key": "\#(secret)", "x": 1}"#, #"{"index": 0, "key": "\#(secret)g"}"#] {
            do { _ = try KeyFeedLine.parse(text) } catch { #expect(!String(describing: error).contains(secret)) }
        }
    }
}
