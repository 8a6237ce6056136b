@testable import Bot
import GStreamerKit
import Synchronization
import Testing
import Locking

/// The keepalive's ping/pong bookkeeping, with no clock and no network.
@Suite struct KeepaliveLedgerTests {
    @Test func pingsCarryTheEpochAndPongsMustEchoIt() {
        var ledger = KeepaliveLedger()
        let ping = ledger.nextPing(epochSeconds: 1_763_900_000.25)
        #expect(ping == "ping:1763900000.250")
        let inexact = ledger.heard("pong:1763900000.25"), ping2 = ledger.heard("ping:1763900000.250")
        let exact = ledger.heard("pong:1763900000.250"), again = ledger.heard("pong:1763900000.250")
        #expect(!inexact, "a pong answers the exact text")
        #expect(!ping2, "a ping is no answer")
        #expect(exact)
        #expect(!again, "one pong per ping")
        #expect(ledger.pongs == 1 && ledger.unmatchedPongs == 2 && ledger.armed)
    }

    @Test func aPeerThatNeverAnsweredNeverMisses() {
        var ledger = KeepaliveLedger()
        for t in 0..<100 {
            let ping = ledger.nextPing(epochSeconds: Double(t * 30))
            #expect(ping != nil)
        }
        #expect(ledger.pingsSent == 100 && ledger.missed == 0 && !ledger.armed && !ledger.lost)
    }

    @Test func twoMissesInARowAfterAPongAreALoss() {
        var ledger = KeepaliveLedger()
        let first = ledger.nextPing(epochSeconds: 0)!
        let answered = ledger.heard(first.replacing("ping:", with: "pong:"))
        #expect(answered)
        let unanswered = ledger.nextPing(epochSeconds: 30), afterOneMiss = ledger.nextPing(epochSeconds: 60)
        #expect(unanswered != nil)
        #expect(afterOneMiss != nil, "one miss is not a loss")
        #expect(ledger.missedInARow == 1 && !ledger.lost)
        let afterTwo = ledger.nextPing(epochSeconds: 90)
        #expect(afterTwo == nil, "the second miss in a row is")
        #expect(ledger.lost && ledger.missed == 2 && ledger.pingsSent == 3)
    }

    @Test func aPongInBetweenStartsTheCountAgain() {
        var ledger = KeepaliveLedger()
        func pong(_ ping: String?) -> String { ping!.replacing("ping:", with: "pong:") }
        let p1 = ledger.nextPing(epochSeconds: 30)
        ledger.heard(pong(p1))
        _ = ledger.nextPing(epochSeconds: 60)            // missed: counted at the next ping
        let p3 = ledger.nextPing(epochSeconds: 90)
        ledger.heard(pong(p3))
        #expect(ledger.missed == 1 && ledger.missedInARow == 0)
        let late = ledger.nextPing(epochSeconds: 120)    // answered too late
        _ = ledger.nextPing(epochSeconds: 150)
        let lateAnswer = ledger.heard(pong(late))
        #expect(!lateAnswer, "a pong after the next ping left is late")
        #expect(ledger.missedInARow == 1 && ledger.unmatchedPongs == 1 && !ledger.lost)
    }
}

/// The keepalive loop on a scripted channel, with short intervals.
@Suite struct KeepaliveLoopTests {
    /// A channel whose peer answers the first `answers` pings.
    final class ScriptedPeer: Sendable {
        let events: AsyncStream<DataChannel.Event>
        let sink: AsyncStream<DataChannel.Event>.Continuation
        let answers: Int
        let sent = Locked<[String]>([])
        init(answers: Int) {
            (events, sink) = AsyncStream.makeStream(of: DataChannel.Event.self)
            self.answers = answers
        }
        func send(_ text: String) {
            let n = sent.withLock { $0.append(text); return $0.count }
            if n <= answers { sink.yield(.text(text.replacing("ping:", with: "pong:"))) }
        }
    }

    @Test func aPeerThatStopsAnsweringIsLostAfterTwoIntervals() async {
        let peer = ScriptedPeer(answers: 3)
        peer.sink.yield(.open)
        let loss = await Keepalive(interval: .milliseconds(20)).run(events: peer.events, send: peer.send)
        #expect(loss == .keepaliveLost)
        // Three answered, then two unanswered; the third would have been the next.
        #expect(peer.sent.withLock { $0.count } == 5)
    }

    @Test func aPeerThatNeverAnswersIsPingedOnAndNeverLost() async {
        let peer = ScriptedPeer(answers: 0)
        peer.sink.yield(.open)
        let run = Task { await Keepalive(interval: .milliseconds(10)).run(events: peer.events, send: peer.send) }
        // Until five pings went out (300 ms alone; far longer when the whole suite loads the
        // machine): not a fixed window, which a starved cooperative pool can miss entirely.
        let clock = ContinuousClock(), t0 = clock.now
        while peer.sent.withLock({ $0.count }) < 5, clock.now - t0 < .seconds(30) { try? await Task.sleep(for: .milliseconds(20)) }
        run.cancel()
        #expect(await run.value == nil)
        #expect(peer.sent.withLock { $0.count } >= 5)
        #expect(peer.sent.withLock { $0.allSatisfy { $0.hasPrefix("ping:") } })
    }

    @Test func nothingIsSentBeforeTheChannelOpensAndAClosedChannelEndsTheLoop() async {
        let peer = ScriptedPeer(answers: .max)
        let run = Task { await Keepalive(interval: .milliseconds(10)).run(events: peer.events, send: peer.send) }
        try? await Task.sleep(for: .milliseconds(100))
        #expect(peer.sent.withLock { $0.isEmpty })
        peer.sink.yield(.open)
        // Until the first ping, not a fixed window: a loaded machine can hold the loop's task longer.
        let clock = ContinuousClock(), t0 = clock.now
        while peer.sent.withLock({ $0.isEmpty }), clock.now - t0 < .seconds(30) { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(!peer.sent.withLock { $0.isEmpty })
        peer.sink.yield(.closed)
        peer.sink.finish()
        #expect(await run.value == nil)
    }
}
