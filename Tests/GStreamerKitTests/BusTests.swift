import CGStreamer
import Foundation
@testable import GStreamerKit
import Synchronization
import Testing

@Suite struct BusTests {
    init() { GStreamer.initialize() }

    @Test func deliversAMessagePostedBeforeTheConsumerStarts() async throws {
        let pipeline = try Pipeline(description: "identity")
        let bus = pipeline.bus
        post("early", on: bus.pointer, from: pipeline.pointer.gstObject())
        let stream = bus.messages()
        post("late", on: bus.pointer, from: pipeline.pointer.gstObject())
        let got = await collect(stream) { $0.elementName == "late" }
        #expect(got.compactMap(\.elementName) == ["early", "late"])
    }

    /// A thread keeps posting while `messages()` starts: every message arrives, once, in the
    /// order posted (those queued before the stream first). The poster pauses a few µs
    /// between messages, so the start can catch up with it and fall between two posts; many
    /// rounds, because each start falls somewhere else in the flow.
    @Test func deliversEveryMessagePostedWhileTheStreamStarts() async throws {
        let count = 400
        for _ in 0..<150 {
            let pipeline = try Pipeline(description: "identity")
            let bus = pipeline.bus
            let target = UnsafeSendable(bus.pointer), source = UnsafeSendable(pipeline.pointer.gstObject())
            let posted = Posted()
            let poster = Thread {
                let clock = ContinuousClock()
                for i in 0..<count {
                    post("seq-\(i)", on: target.value, from: source.value)
                    posted.count.add(1, ordering: .relaxed)
                    let until = clock.now.advanced(by: .microseconds(i % 9))
                    while clock.now < until {}
                }
                post("done", on: target.value, from: source.value)
            }
            poster.start()
            while posted.count.load(ordering: .relaxed) < count / 8 {}
            let stream = bus.messages()
            let got = await collect(stream, timeout: .seconds(5)) { $0.elementName == "done" }
            let numbers = got.compactMap { $0.elementName?.split(separator: "-").last.flatMap { Int($0) } }
            let lost = Set(0..<count).subtracting(numbers).sorted()
            #expect(lost.isEmpty, "lost \(lost) of \(count)")
            #expect(numbers == numbers.sorted(), "out of order")
            #expect(got.last?.elementName == "done")
            if numbers.count != count { break }
        }
    }

    /// The bus hands each message back to GStreamer: the message's reference to its source
    /// is dropped once it is delivered.
    @Test func releasesEachMessageItDelivers() async throws {
        let pipeline = try Pipeline(description: "identity name=a")
        let a = try pipeline.element(named: "a")
        let before = refcount(a.pointer)
        let stream = pipeline.bus.messages()
        for i in 0..<10 { post("m\(i)", on: pipeline.bus.pointer, from: a.pointer.gstObject()) }
        let got = await collect(stream) { $0.elementName == "m9" }
        #expect(got.count == 10)
        #expect(refcount(a.pointer) == before)
    }

    @Test func aNewStreamFinishesThePreviousOne() async throws {
        let pipeline = try Pipeline(description: "identity")
        let bus = pipeline.bus
        let first = bus.messages()
        post("a", on: bus.pointer, from: pipeline.pointer.gstObject())
        let second = bus.messages()
        post("b", on: bus.pointer, from: pipeline.pointer.gstObject())
        // `first` ends by itself (no timeout) with what was posted while it was current.
        #expect(await collect(first, timeout: .seconds(5)).compactMap(\.elementName) == ["a"])
        #expect(await collect(second) { $0.elementName == "b" }.compactMap(\.elementName) == ["b"])
    }

    @Test func keepsMessagesPostedBetweenTwoStreams() async throws {
        let pipeline = try Pipeline(description: "identity")
        let bus = pipeline.bus
        do {
            let stream = bus.messages()
            post("x", on: bus.pointer, from: pipeline.pointer.gstObject())
            _ = await collect(stream) { $0.elementName == "x" }
        }
        post("y", on: bus.pointer, from: pipeline.pointer.gstObject())
        let got = await collect(bus.messages()) { $0.elementName == "y" }
        #expect(got.compactMap(\.elementName) == ["y"])
    }
}

private final class Posted: Sendable {
    let count = Atomic<Int>(0)
}
