import FrameCrypto
import Foundation
import Testing

/// The keys of formats that name their key: a participant's own before the shared one,
/// ratchets; no media, no I/O.
@Suite struct FrameKeyStoreTests {
    let a = try! KeyMaterial(Array(repeating: 1, count: 16)), b = try! KeyMaterial(Array(repeating: 2, count: 16))

    func store() -> FrameKeyStore<SFrameFormat> { FrameKeyStore(format: SFrameFormat()) }

    @Test func ownKeyBeforeTheSharedOne() throws {
        let s = store()
        try s.set(participant: nil, index: 3, material: a)
        try s.set(participant: "alice", index: 3, material: b)
        #expect(s.key(participant: "alice", index: 3)?.key.kid == 3)
        #expect(s.key(participant: "bob", index: 3) != nil, "the shared key")
        #expect(s.key(participant: "bob", index: 4) == nil)
        #expect(s.key(participant: "alice", index: 3) !== s.key(participant: "bob", index: 3))
        #expect(s.summary.participants == ["alice": [3]] && s.summary.shared == [3])
    }

    @Test func ratchetMovesTheMaterialOnceAStep() throws {
        let s = FrameKeyStore(format: FrameCryptorFormat(options: FrameCryptorOptions(ratchetSalt: Array("salt".utf8))))
        try s.set(participant: "alice", index: 0, material: a)
        let before = try #require(s.key(participant: "alice", index: 0)).material
        #expect(try s.ratchet(participant: "alice", index: 0))
        let after = try #require(s.key(participant: "alice", index: 0)).material
        #expect(after != before && after.bytes == FrameCryptorKey.ratchetMaterial(before.bytes, salt: Array("salt".utf8)))
        #expect(try !s.ratchet(participant: "bob", index: 0), "no key of bob's own to ratchet")
        #expect(throws: KeyError.self) { try s.set(participant: "alice", index: 16, material: a) }
    }

    @Test func sframeKeysCannotRatchet() throws {
        let s = store()
        try s.set(participant: nil, index: 0, material: a)
        #expect(try !s.ratchet(participant: nil, index: 0))
    }
}
