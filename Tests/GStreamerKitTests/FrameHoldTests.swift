import GStreamerKit
import Synchronization
import Testing

/// `addHoldingFrameTransform`: held frames come out later, in order, with their own
/// timestamps, before the frame that settled them or before end-of-stream; those that still
/// fail never come out.
@Suite struct FrameHoldTests {
    init() { GStreamer.initialize() }

    /// Frame `i` is `[kind, i]`; what each kind does, by the first byte:
    enum Kind: UInt8 {
        /// Opens once unlocked, else held.
        case locked = 0
        /// Unlocks, and is held itself (only end-of-stream settles it).
        case unlockAndHold = 1
        /// Unlocks and opens.
        case unlockAndOpen = 2
        /// Dropped, unlocking nothing.
        case drop = 3
    }

    /// Passes frames through as they are once unlocked, like an opener whose key came.
    final class Transform: HoldingFrameTransform {
        let unlocked = Atomic<Bool>(false)
        let retried = Atomic<Int>(0)
        let failedRetries = Atomic<Int>(0)
        let settlements = Mutex<[Int]>([])

        func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { input.count }

        func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> FrameOutcome {
            switch Kind(rawValue: input[0]) {
            case .locked: if !unlocked.load(ordering: .relaxed) { return .hold }
            case .unlockAndHold: unlocked.store(true, ordering: .relaxed); return .hold
            case .unlockAndOpen: unlocked.store(true, ordering: .relaxed)
            case .drop, nil: return .drop
            }
            output.copyMemory(from: input)
            return .output(input.count)
        }

        func retry(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            retried.add(1, ordering: .relaxed)
            guard unlocked.load(ordering: .relaxed) else { failedRetries.add(1, ordering: .relaxed); return nil }
            output.copyMemory(from: input)
            return input.count
        }

        func settled(abandoned: Int) { settlements.withLock { $0.append(abandoned) } }
    }

    /// Pushes the frames through appsrc → identity (the transform on its source pad) → fakesink
    /// and returns what reached the sink: each frame's number and presentation time in ms.
    func run(_ kinds: [Kind], _ t: Transform) async throws -> [(frame: UInt8, ms: Int)] {
        let pipeline = try Pipeline(description: "appsrc name=src format=time caps=application/x-test ! identity name=open ! fakesink name=sink async=false")
        let open = try pipeline.element(named: "open")
        let probe = try open.staticPad("src").addHoldingFrameTransform(t, sink: try open.staticPad("sink"))
        let reached = Mutex<[(frame: UInt8, ms: Int)]>([])
        let sink = try pipeline.element(named: "sink").staticPad("sink").addTimedBufferObserver { bytes, pts in
            reached.withLock { $0.append((bytes[1], Int(((pts ?? -1) * 1000).rounded()))) }
        }
        defer { probe.remove(); sink.remove() }
        let source = try AppSource(named: "src", in: pipeline)
        for (i, kind) in kinds.enumerated() {
            [kind.rawValue, UInt8(i)].withUnsafeBytes { _ = source.push($0, pts: UInt64(i) * 20_000_000) }
        }
        source.endOfStream()
        try await pipeline.runToEnd()
        return reached.withLock { $0 }
    }

    @Test func heldFramesGoOutInOrderBeforeTheFrameThatOpens() async throws {
        let t = Transform()
        let out = try await run([.locked, .locked, .locked, .unlockAndOpen, .locked], t)
        #expect(out.map(\.frame) == [0, 1, 2, 3, 4], "the held three first, in order")
        #expect(out.map(\.ms) == [0, 20, 40, 60, 80], "each with its own timestamp")
        #expect(t.retried.load(ordering: .relaxed) == 3 && t.failedRetries.load(ordering: .relaxed) == 0)
        #expect(t.settlements.withLock { $0 } == [0])
    }

    @Test func endOfStreamSettlesWhatIsHeld() async throws {
        let t = Transform()
        let out = try await run([.locked, .locked, .unlockAndHold], t)
        #expect(out.map(\.frame) == [0, 1, 2], "all three reach the sink before end-of-stream")
        #expect(out.map(\.ms) == [0, 20, 40])
        #expect(t.settlements.withLock { $0 } == [0])
    }

    @Test func framesThatStillFailNeverComeOut() async throws {
        let t = Transform()
        // Held, then a dropped frame settles them while still locked: both dropped for good.
        let out = try await run([.locked, .locked, .drop, .unlockAndOpen, .locked], t)
        #expect(out.map(\.frame) == [3, 4])
        #expect(t.retried.load(ordering: .relaxed) == 2 && t.failedRetries.load(ordering: .relaxed) == 2)
        // Never unlocked: end-of-stream tries them once more and drops them.
        let locked = Transform()
        #expect(try await run([.locked, .locked], locked).isEmpty)
        #expect(locked.failedRetries.load(ordering: .relaxed) == 2)
    }
}
