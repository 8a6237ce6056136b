@testable import Bot
import FrameCrypto
import GStreamerKit
import Locking
import Synchronization
import Testing

/// The recorder's hold for frames that fail while a new call key is on its way (issue 42): its
/// bounds as a state machine on an injected clock, and the opener holding real sealed frames
/// in a pipeline with no Janus.
@Suite struct KeyHoldTests {
    init() { GStreamer.initialize() }

    final class Clock: Sendable {
        let now = Locked<Double>(100)
        func advance(_ s: Double) { now.withLock { $0 += s } }
        var read: @Sendable () -> Double { { self.now.withLock { $0 } } }
    }

    @Test func holdsUpToItsFrameBoundThenDropsUntilAFrameOpens() {
        let hold = KeyHold(KeyHoldBounds(seconds: 3, frames: 4, bytes: 1 << 20), clock: Clock().read)
        #expect((1...4).allSatisfy { _ in hold.admit(bytes: 100) } && hold.held == 4)
        #expect(!hold.admit(bytes: 100) && hold.isSpent, "the fifth is over the bound: the episode is spent")
        hold.settled()
        #expect(!hold.admit(bytes: 100), "spent: later failures are dropped at once, not held again")
        hold.opened()
        #expect(hold.admit(bytes: 100) && hold.held == 1, "a frame that opened ends the episode; the next failure holds again")
    }

    @Test func holdsNoLongerThanItsTimeFromTheFirstFrameHeld() {
        let clock = Clock()
        let hold = KeyHold(KeyHoldBounds(seconds: 3, frames: 300, bytes: 1 << 20), clock: clock.read)
        #expect(hold.admit(bytes: 10))
        clock.advance(2.9)
        #expect(hold.admit(bytes: 10))
        clock.advance(0.2)
        #expect(!hold.admit(bytes: 10) && hold.isSpent, "3.1 s after the first frame held")
    }

    @Test func holdsNoMoreBytesThanItsBound() {
        let hold = KeyHold(KeyHoldBounds(seconds: 3, frames: 300, bytes: 1000), clock: Clock().read)
        #expect(hold.admit(bytes: 600) && !hold.admit(bytes: 600))
        let none = KeyHold(.none, clock: Clock().read)
        #expect(!none.admit(bytes: 1), "bounds of none hold nothing")
    }

    @Test func settlingEndsAnEpisodeThatIsNotSpent() {
        let hold = KeyHold(KeyHoldBounds(), clock: Clock().read)
        #expect(hold.admit(bytes: 10) && hold.admit(bytes: 10))
        hold.settled()
        #expect(hold.held == 0 && !hold.isSpent)
        #expect(hold.admit(bytes: 10) && hold.held == 1, "a new episode, with its own bounds")
    }

    /// Sealed audio frames through appsrc → identity (the holding opener) → fakesink: the ring
    /// is stale; the new key comes (set from `onKeyMissing`, on the streaming thread, as a
    /// key host's answer arrives while frames fail) at the `keyAt`-th failure.
    func record(frames: Int, keyAt: Int?, bounds: KeyHoldBounds) async throws -> (stats: FrameStats.Snapshot, out: [(frame: UInt8, ms: Int)]) {
        let fresh = CallKey.random()
        let ring = KeyRing(current: .random())
        let stats = FrameStats(), failures = Locked(0)
        let opener = Opener(ring: ring, AudioFormat.self, stats: stats, times: FrameTimes(), hold: KeyHold(bounds), onKeyMissing: {
            if failures.withLock({ $0 += 1; return $0 }) == keyAt { ring.setCurrent(fresh) }
        }, onDrop: nil)
        let pipeline = try Pipeline(description: "appsrc name=src format=time caps=audio/x-opus ! identity name=open ! fakesink name=sink async=false")
        let open = try pipeline.element(named: "open")
        let probe = try open.staticPad("src").addHoldingFrameTransform(opener, sink: try open.staticPad("sink"))
        let reached = Locked<[(frame: UInt8, ms: Int)]>([])
        let sink = try pipeline.element(named: "sink").staticPad("sink").addTimedBufferObserver { bytes, pts in
            reached.withLock { $0.append((bytes[0], Int(((pts ?? -1) * 1000).rounded()))) }
        }
        defer { probe.remove(); sink.remove() }
        let source = try AppSource(named: "src", in: pipeline)
        for i in 0..<frames {
            var sealed = [UInt8](repeating: 0, count: 64)
            let n = try [UInt8(i), 1, 2, 3].withUnsafeBytes { p in try sealed.withUnsafeMutableBytes { try AudioFrame.seal(p, key: fresh, into: $0) } }
            sealed[..<n].withUnsafeBytes { _ = source.push($0, pts: UInt64(i) * 20_000_000) }
        }
        source.endOfStream()
        try await pipeline.runToEnd()
        return (stats.snapshot, reached.withLock { $0 })
    }

    @Test func framesThatFailedBeforeTheKeyCameAreOpenedInOrder() async throws {
        let (stats, out) = try await record(frames: 40, keyAt: 8, bounds: KeyHoldBounds())
        #expect(out.map(\.frame) == (0..<40).map(UInt8.init), "every frame, the eight held first, in order")
        #expect(out.map(\.ms) == (0..<40).map { $0 * 20 }, "with their own timestamps")
        #expect(stats.received == 40 && stats.opened == 40 && stats.dropped["no_key_opens"] == 0, "\(stats)")
    }

    @Test func aKeyThatComesPastTheBoundLosesWhatWasHeld() async throws {
        // Ten held; the eleventh is over the bound: the ten are tried again (no key yet) and
        // dropped, and failures are dropped at once until the key comes at the 20th.
        let (stats, out) = try await record(frames: 30, keyAt: 20, bounds: KeyHoldBounds(seconds: 3, frames: 10, bytes: 1 << 20))
        #expect(out.map(\.frame) == (20..<30).map(UInt8.init), "only what came after the key")
        #expect(stats.received == 30 && stats.opened == 10 && stats.dropped["no_key_opens"] == 20, "\(stats)")
    }

    @Test func aKeyThatNeverComesCountsEveryHeldFrameAtTheEnd() async throws {
        let (stats, out) = try await record(frames: 5, keyAt: nil, bounds: KeyHoldBounds())
        #expect(out.isEmpty, "nothing unopened reaches the sink")
        #expect(stats.received == 5 && stats.opened == 0 && stats.dropped["no_key_opens"] == 5, "end-of-stream settled them: \(stats)")
    }
}
