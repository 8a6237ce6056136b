@testable import Bot
import FrameCrypto
import GStreamerKit
import Testing
import TestSupport

/// SFrame's anti-replay on the receive path: the SFU cannot read or forge frames, but it can
/// send a participant's old frames again. Through the real opener the pad probe runs.
@Suite struct ReplayTests {
    func stores() throws -> (sender: FrameKeyStore<SFrameFormat>, receiver: FrameKeyStore<SFrameFormat>) {
        let material = try KeyMaterial((0..<16).map { UInt8($0) })
        let sender = FrameKeyStore(format: SFrameFormat()), receiver = FrameKeyStore(format: SFrameFormat())
        try sender.set(participant: nil, index: 3, material: material)
        try receiver.set(participant: nil, index: 3, material: material)
        return (sender, receiver)
    }

    @Test("an SFrame frame sent again, or older than the window, is dropped as replayed; reordered ones open")
    func replaysAreDropped() throws {
        let (sender, receiver) = try stores()
        let sealer = sender.sealer(kind: .audio, participant: "a", index: SealingIndex(3), stats: FrameStats())
        let stats = FrameStats()
        let opener = receiver.opener(kind: .audio, participant: "a", stats: stats, times: FrameTimes(), counts: KeyIndexCounts(),
                                     hold: nil, onDrop: nil, onSettled: nil)
        let frames: [[UInt8]] = (0..<200).map { (i: Int) -> [UInt8] in sealer.run([0xF8, UInt8(i & 0xFF), 1, 2, 3]) ?? [] }
        // In order but for one pair swapped (reordering within the window opens).
        for i in [0, 2, 1] + Array(3..<200) { #expect(opener.run(frames[i]) == [0xF8, UInt8(i & 0xFF), 1, 2, 3]) }
        #expect(opener.run(frames[199]) == nil, "the last frame again")
        #expect(opener.run(frames[150]) == nil, "a frame within the window, seen")
        #expect(opener.run(frames[10]) == nil, "a frame older than the window")
        let s = stats.snapshot
        #expect(s.opened == 200 && s.dropped["replayed"] == 3, "\(s)")
    }

    @Test("a new feed's opener starts its own window: a sender back with a lower counter opens")
    func aNewTrackStartsItsOwnWindow() throws {
        let (_, receiver) = try stores()
        let material = try KeyMaterial((0..<16).map { UInt8($0) })
        // Two senders under one key whose counters start wherever each chose: the second below the first.
        let high = FrameKeyStore(format: SFrameFormat()), low = FrameKeyStore(format: SFrameFormat())
        try high.set(participant: nil, index: 3, material: material)
        try low.set(participant: nil, index: 3, material: material)
        let first = receiver.opener(kind: .audio, participant: "a", stats: FrameStats(), times: FrameTimes(), counts: KeyIndexCounts(),
                                    hold: nil, onDrop: nil, onSettled: nil)
        let second = receiver.opener(kind: .audio, participant: "a", stats: FrameStats(), times: FrameTimes(), counts: KeyIndexCounts(),
                                     hold: nil, onDrop: nil, onSettled: nil)
        let a = try #require(high.sealer(kind: .audio, participant: "a", index: SealingIndex(3), stats: FrameStats()).run([0xF8, 9]))
        let b = try #require(low.sealer(kind: .audio, participant: "a", index: SealingIndex(3), stats: FrameStats()).run([0xF8, 8]))
        let ctrA = a.withUnsafeBytes { SFrameOpener.header(of: $0)?.ctr ?? 0 }, ctrB = b.withUnsafeBytes { SFrameOpener.header(of: $0)?.ctr ?? 0 }
        let (older, newer) = ctrA < ctrB ? (a, b) : (b, a)
        #expect(first.run(newer) != nil)
        #expect(second.run(older) != nil, "the new track has no memory of the old one")
    }
}
