import Testing
import FrameCrypto

@Suite struct SFrameReplayWindowTests {
    @Test func eachCounterOnceInAnyOrderWithinTheWindow() {
        let window = SFrameReplayWindow()
        #expect((0..<10).allSatisfy { window.accept(ctr: $0) })
        #expect(!window.accept(ctr: 9) && !window.accept(ctr: 0))
        // Reordered: 20 before 15..19, each of those once.
        #expect(window.accept(ctr: 20))
        #expect((15..<20).allSatisfy { window.accept(ctr: $0) })
        #expect((15...20).allSatisfy { !window.accept(ctr: $0) })
        #expect(window.accept(ctr: 12) && !window.accept(ctr: 12))
    }

    @Test func tooOldIsRefused() {
        let window = SFrameReplayWindow()
        #expect(window.accept(ctr: 127))
        #expect(window.accept(ctr: 0))  // 127 back: the window's oldest slot
        #expect(window.accept(ctr: 128))
        #expect(!window.accept(ctr: 0))  // 128 back: outside, refused though never seen twice
        #expect(window.accept(ctr: 1) && !window.accept(ctr: 1))  // 127 back: the oldest slot still open
        #expect(window.accept(ctr: 2) && window.accept(ctr: 100))
        // A jump past the whole window forgets it; the old values are then too old.
        #expect(window.accept(ctr: 10_000))
        #expect(!window.accept(ctr: 10_000 - 128) && window.accept(ctr: 10_000 - 127))
    }

    @Test func firstCounterMayBeAnything() {
        let window = SFrameReplayWindow()
        #expect(window.accept(ctr: .max) && !window.accept(ctr: .max))
        #expect(window.accept(ctr: .max - 127) && !window.accept(ctr: .max - 128))
        let zero = SFrameReplayWindow()
        #expect(zero.accept(ctr: 0) && !zero.accept(ctr: 0) && zero.accept(ctr: 1))
    }
}
