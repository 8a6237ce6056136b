import FrameCrypto
import Foundation
import Synchronization
import Testing
import Locking

/// The key log (`--key-log`): private file, one JSON line per key, and the reader that picks
/// the key in use at a frame's time across rotations.
@Suite struct KeyLogTests {
    let a = CallKey.random(), b = CallKey.random(), c = CallKey.random()

    func same(_ x: CallKey?, _ y: CallKey?) -> Bool {
        switch (x, y) {
        case (nil, nil): true
        case (let x?, let y?): x.symmetricKey == y.symmetricKey
        default: false
        }
    }

    func tempPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("keylog-\(UUID().uuidString).jsonl").path
    }

    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
    }

    @Test func newFileIs0600AndLinesParse() throws {
        let path = tempPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try KeyLog(path: path)
        #expect(mode(path) == 0o600)
        #expect(log.append(call: 42, key: a, from: 1000.5))
        #expect(log.append(call: 42, key: b, from: 1300, index: 3, participant: "17"))
        let lines = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONDecoder().decode(KeyLog.Entry.self, from: Data(lines[0].utf8))
        #expect(first == KeyLog.Entry(call: 42, key: a.exportedHex, from: 1000.5))
        let second = try JSONDecoder().decode(KeyLog.Entry.self, from: Data(lines[1].utf8))
        #expect(second.index == 3 && second.participant == "17" && second.key == b.exportedHex)
        #expect(try CallKey(hex: second.key).symmetricKey == b.symmetricKey)
        #expect(mode(path) == 0o600)
    }

    @Test func appendsToOwnPrivateFile() throws {
        let path = tempPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try KeyLog(path: path).append(call: 1, key: a, from: 1)
        try KeyLog(path: path).append(call: 1, key: b, from: 2)
        #expect(try KeyLog.Entries(path: path).keys.count == 2)
    }

    @Test func refusesAFileOthersCanRead() throws {
        let path = tempPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(), attributes: [.posixPermissions: 0o644]))
        #expect(throws: KeyLogError.self) { try KeyLog(path: path) }
        // Nothing was written into it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
    }

    @Test func refusesASymlink() throws {
        let target = tempPath(), link = tempPath()
        defer { try? FileManager.default.removeItem(atPath: target); try? FileManager.default.removeItem(atPath: link) }
        #expect(FileManager.default.createFile(atPath: target, contents: Data(), attributes: [.posixPermissions: 0o600]))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(throws: KeyLogError.self) { try KeyLog(path: link) }
    }

    /// The ring tells the log of its first key, an emergency key and a scheduled rotation,
    /// each with the time it came (or comes) into use.
    @Test func keyRingObserverLogsEachKeyWithItsTime() throws {
        let path = tempPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try KeyLog(path: path)
        let now = Locked(5000.0)
        let ring = KeyRing(current: a, clock: { now.withLock { $0 } }, observer: log.observer(call: 7))
        now.withLock { $0 = 5100 }
        ring.setCurrent(b)
        ring.schedule(c, at: 5110)
        let entries = try KeyLog.Entries(path: path, call: 7)
        #expect(entries.keys.map(\.from) == [5000, 5100, 5110])
        #expect(same(entries.keys[0].key, a) && same(entries.keys[1].key, b) && same(entries.keys[2].key, c))
        #expect(try KeyLog.Entries(path: path, call: 8).keys.isEmpty)
    }

    /// Across a rotation (a until 1300, b until 1600, c after): the key in use at t first,
    /// the previous as backup, the next as future.
    @Test func readerPicksTheKeyInUseByTime() throws {
        let entries = try KeyLog.Entries([
            .init(call: 1, key: b.exportedHex, from: 1300),
            .init(call: 1, key: a.exportedHex, from: 1000),
            .init(call: 1, key: c.exportedHex, from: 1600),
        ])
        let early = entries.candidates(at: 900)  // before the first entry: the first key
        #expect(same(early.current, a) && same(early.backup, nil) && same(early.future, b))
        let t1 = entries.candidates(at: 1299.9)
        #expect(same(t1.current, a) && same(t1.future, b))
        let t2 = entries.candidates(at: 1300)
        #expect(same(t2.current, b) && same(t2.backup, a) && same(t2.future, c))
        let t3 = entries.candidates(at: 99_999)
        #expect(same(t3.current, c) && same(t3.backup, b) && same(t3.future, nil))
        #expect(entries.keys(near: 1450).count == 3)
        #expect(same(entries.keys(near: 1450).first, b))
    }

    /// The keys the reader picks open frames sealed before and after the rotation.
    @Test func readerCandidatesOpenFramesAcrossARotation() throws {
        let entries = try KeyLog.Entries([.init(call: 1, key: a.exportedHex, from: 1000), .init(call: 1, key: b.exportedHex, from: 1300)])
        let opus = [UInt8](repeating: 0x5A, count: 60)
        let beforeFrame = try AudioFrame.sealed(opus, key: a), afterFrame = try AudioFrame.sealed(opus, key: b)
        #expect(try AudioFrame.opened(beforeFrame, keys: entries.candidates(at: 1200)) == opus)
        #expect(try AudioFrame.opened(afterFrame, keys: entries.candidates(at: 1400)) == opus)
        // A frame that came a little early still opens (the next key is the future one).
        #expect(try AudioFrame.opened(afterFrame, keys: entries.candidates(at: 1299)) == opus)
        // An unrelated key opens nothing.
        #expect(throws: DropReason.noKey) { try AudioFrame.opened(try AudioFrame.sealed(opus, key: c), keys: entries.candidates(at: 1400)) }
    }

    @Test func sameKeyLoggedTwiceKeepsItsFirstTime() throws {
        let entries = try KeyLog.Entries([.init(call: 1, key: a.exportedHex, from: 1000), .init(call: 1, key: a.exportedHex, from: 2000)])
        #expect(entries.keys.count == 1 && entries.keys[0].from == 1000)
    }

    @Test func badLineIsReportedWithItsNumber() throws {
        let path = tempPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try KeyLog(path: path).append(call: 1, key: a, from: 1)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("not json\n".utf8))
        try handle.close()
        #expect { try KeyLog.Entries(path: path) } throws: { "\($0)".contains("line 2") }
    }
}

/// `--key-map`: the JSON form, order newest first, lookup by display or feed id.
@Suite struct KeyMapTests {
    @Test func parsesAndOrdersNewestFirst() throws {
        let k1 = CallKey.random(), k2 = CallKey.random(), k3 = CallKey.random()
        let json = #"{"17": {"2": "\#(k2.exportedHex)", "10": "\#(k3.exportedHex)", "1": "\#(k1.exportedHex)"}}"#
        let map = try KeyMap(json: Data(json.utf8))
        let s = try #require(map.senders["17"])
        #expect(s.keys.map(\.index) == [10, 2, 1])
        #expect(s.newest?.symmetricKey == k3.symmetricKey)
        #expect(map.keys(display: "17:Alice", feedID: 999).participant == "17")
        #expect(map.keys(display: "Bob", feedID: 17).keys.count == 3)
        #expect(map.keys(display: "18:Carol", feedID: 5).keys.isEmpty)
        // Round trip.
        let again = try KeyMap(json: map.json)
        #expect(again.senders["17"]?.keys.map(\.index) == [10, 2, 1])
    }

    @Test func refusesBadMaps() {
        for bad in [#"[1]"#, #"{"1": "abc"}"#, #"{"1": {}}"#, #"{"1": {"x": "00"}}"#, #"{"1": {"1": "zz"}}"#] {
            #expect(throws: KeyMapError.self) { try KeyMap(json: Data(bad.utf8)) }
        }
    }

    /// Every shard of a load run derives the same map; every sender's key differs.
    @Test func derivedMapIsDeterministicAndDistinct() {
        let call = CallKey.random()
        let a = KeyMap.derived(from: call, senders: ["p0", "p1"]), b = KeyMap.derived(from: call, senders: ["p0", "p1"])
        #expect(a.senders["p0"]?.newest?.exportedHex == b.senders["p0"]?.newest?.exportedHex)
        #expect(a.senders["p0"]?.newest?.exportedHex != a.senders["p1"]?.newest?.exportedHex)
        #expect(a.senders["p0"]?.newest?.exportedHex != call.exportedHex)
        #expect(a.senders["p1"]?.keys.map(\.index) == [0])
    }

    @Test func participantIDIsBeforeTheFirstColon() {
        #expect(KeyMap.participantID(display: "123:Ann:x") == "123")
        #expect(KeyMap.participantID(display: ":Ann") == nil)
    }

    /// `--participant-id`: the same display and feed read three ways.
    @Test func participantIDRules() {
        #expect(ParticipantIDRule.displayPrefix.id(display: "team:alice", feedID: 42) == "team")
        #expect(ParticipantIDRule.display.id(display: "team:alice", feedID: 42) == "team:alice")
        #expect(ParticipantIDRule.feed.id(display: "team:alice", feedID: 42) == "42")
        #expect(ParticipantIDRule.displayPrefix.id(display: ":x", feedID: 42) == "42")
        #expect(ParticipantIDRule.display.id(display: "", feedID: 42) == "42")
        #expect(ParticipantIDRule.feed.id(display: "a", feedID: nil) == "")
    }
}
