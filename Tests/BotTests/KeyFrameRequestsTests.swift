import Foundation
import Synchronization
import Testing
@testable import Bot
import TestSupport

/// At most one keyframe request a second, but none lost: one made within the second after the
/// last goes out at the second's end, unless a keyframe comes first.
@Suite struct KeyFrameRequestsTests {
    final class Asks: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    @Test func aRequestWithinTheSecondGoesOutAtItsEnd() async throws {
        let asks = Asks()
        let requests = KeyFrameRequests(ask: { asks.count.add(1, ordering: .relaxed) })
        requests.request()
        #expect(asks.value == 1, "the first request goes out at once")
        // A picture lost right after: before, this request was dropped and the file stayed
        // broken until the sender's next keyframe.
        for _ in 0..<5 { requests.request() }
        #expect(asks.value == 1, "not twice within a second")
        let trailing = await eventually(within: 3) { asks.value == 2 }
        #expect(trailing && requests.sent == 2, "\(asks.value) asked: the request within the second was dropped")
        try await Task.sleep(for: .milliseconds(1500))
        #expect(asks.value == 2, "five requests within a second make one more, not five")
    }

    @Test func aKeyFrameThatArrivesFirstAnswersTheWaitingRequest() async throws {
        let asks = Asks()
        let requests = KeyFrameRequests(ask: { asks.count.add(1, ordering: .relaxed) })
        requests.request()
        requests.request()
        requests.keyFrameArrived()
        try await Task.sleep(for: .milliseconds(1500))
        #expect(asks.value == 1, "a keyframe after the request answered it: \(asks.value) asked")
        requests.request()
        #expect(asks.value == 2, "a second later a request goes out at once")
    }
}
