import FrameCrypto
import Synchronization
import Testing
import Locking

/// The key ring's order and lifetimes (ECALL-WIRE §4) with an injected clock.
@Suite struct KeyRingTests {
    final class Clock: Sendable {
        let now = Locked(1_000_000.0)
        func advance(_ s: Double) { now.withLock { $0 += s } }
        var function: @Sendable () -> Double { { self.now.withLock { $0 } } }
    }

    let a = CallKey.random(), b = CallKey.random(), c = CallKey.random()

    func same(_ x: CallKey?, _ y: CallKey?) -> Bool {
        switch (x, y) {
        case (nil, nil): true
        case (let x?, let y?): x.symmetricKey == y.symmetricKey
        default: false
        }
    }

    @Test func setCurrentKeepsPreviousAsBackupFor30s() {
        let clock = Clock()
        let ring = KeyRing(current: a, clock: clock.function)
        ring.setCurrent(b)
        #expect(same(ring.candidates.current, b))
        #expect(same(ring.candidates.backup, a))
        #expect(same(ring.sealingKey, b))
        clock.advance(29.9)
        #expect(same(ring.candidates.backup, a))
        clock.advance(0.2)
        #expect(ring.candidates.backup == nil)
    }

    @Test func rotationOpensWithFutureAtOnceAndSwitchesAtTimestamp() {
        let clock = Clock()
        let ring = KeyRing(current: a, clock: clock.function)
        ring.schedule(b, at: clock.now.withLock { $0 } + 10)
        var k = ring.candidates
        #expect(same(k.current, a) && same(k.future, b) && k.backup == nil)
        #expect(same(ring.sealingKey, a), "sealing switches only at the timestamp")
        clock.advance(10)
        k = ring.candidates
        #expect(same(k.current, b) && same(k.backup, a) && k.future == nil)
        #expect(same(ring.sealingKey, b))
    }

    @Test func futureKeyExpiresAfter60sIfNotApplied() {
        let clock = Clock()
        let ring = KeyRing(current: a, clock: clock.function)
        ring.schedule(b, at: clock.now.withLock { $0 } + 120)
        clock.advance(59)
        #expect(same(ring.candidates.future, b))
        clock.advance(1)
        #expect(ring.candidates.future == nil)
        clock.advance(100)
        #expect(same(ring.candidates.current, a), "an expired future key is never applied")
    }

    @Test func openTriesCurrentThenBackupThenFuture() throws {
        let clock = Clock()
        let ring = KeyRing(current: a, clock: clock.function)
        ring.setCurrent(b)             // a → backup
        ring.schedule(c, at: clock.now.withLock { $0 } + 10)  // c → future
        for key in [a, b, c] {
            let frame = try AudioFrame.sealed([9, 8, 7], key: key)
            #expect(try AudioFrame.opened(frame, keys: ring.candidates) == [9, 8, 7])
        }
    }

    @Test func keyParsing() throws {
        #expect(throws: KeyError.wrongLength(2)) { try CallKey(hex: "abcd") }
        #expect(throws: KeyError.notHex) { try CallKey(hex: String(repeating: "zz", count: 32)) }
        _ = try CallKey(hex: String(repeating: "0A", count: 32) + "\n")
        #expect(String(describing: a) == "CallKey(<redacted>)", "key bytes never reach a log")
    }
}
