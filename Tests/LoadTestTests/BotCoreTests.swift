import Bot
import GStreamerKit
import Janus
import JanusTesting
@testable import LoadTest
import Logging
import Synchronization
import Testing
import Locking

/// The load bots' shared core with a scripted bot (fake Janus sessions, an empty pipeline):
/// its State through join, loss, comeback, restart and leave.
@Suite(.timeLimit(.minutes(2))) struct BotCoreTests {
    struct Attempt: BotAttempt, @unchecked Sendable {
        // @unchecked: the pipeline is a thread-safe GStreamer reference.
        let session: JanusSession
        let pipeline: Pipeline
        let clock = PhaseClock()
        var tasks: [Task<Void, Never>] = []
        func leave(announce: Bool) async {}
    }

    /// Joins on a fake Janus; `failing` attempts from now on fail before they begin.
    final class ScriptedBot: LoadBot {
        let core = BotCore<Attempt>(display: "bot", log: Logger(label: "test.botcore"), rejoinTimeout: .seconds(30))
        let failing = Locked(0)
        let attempts = Locked<[Bool]>([])  // whether each reused a session
        let stoppedCount = Locked(0)

        func attempt(reusing kept: JanusSession?) async throws {
            attempts.withLock { $0.append(kept != nil) }
            let fail = failing.withLock { n in defer { n = max(0, n - 1) }; return n > 0 }
            if fail { throw LoadBotError("scripted failure") }
            let session: JanusSession
            if let kept { session = kept } else {
                session = try await JanusSession.open(over: FakeJanus(autoReply: [.create, .keepalive, .destroy]), url: "fake",
                                                      options: .init(), logger: Logger(label: "test.botcore"))
            }
            try await core.begin(Attempt(session: session, pipeline: try Pipeline(description: "fakesrc ! fakesink")))
            core.finished()
        }
        func stopping(_ attempt: Attempt) {}
        func stopped(_ attempt: Attempt) { stoppedCount.withLock { $0 += 1 } }
    }

    @Test func aLossComesBackOnceOnANewSessionAndARestartKeepsTheSession() async throws {
        let bot = ScriptedBot()
        try await bot.attempt(reusing: nil)
        #expect(bot.core.isUp && !bot.core.isRecovering)

        // Lost twice (two reports of one loss): one comeback, which fails twice before it is back.
        bot.failing.withLock { $0 = 2 }
        bot.core.lost(.sessionEnded, bot) { _ in true }
        bot.core.lost(.sessionEnded, bot) { _ in true }
        #expect(bot.core.isRecovering && !bot.core.isUp)
        #expect(await waitUntil { bot.core.isUp })
        var counts = await bot.core.snapshot(current: bot.core.current?.session)
        #expect(counts.rejoins == 1 && counts.mediaRestarts == 0 && counts.seconds.count == 1 && counts.gaveUp == nil, "\(counts)")
        #expect(bot.attempts.withLock { $0 } == [false, false, false, false], "the first join and three tries, none on a kept session")

        // A restart keeps the session: a new attempt on it.
        let session = try #require(bot.core.current?.session)
        bot.core.restartMedia(bot)
        #expect(await waitUntil { bot.core.isUp })
        #expect(bot.core.current?.session === session)
        counts = await bot.core.snapshot(current: session)
        #expect(counts.rejoins == 1 && counts.mediaRestarts == 1, "\(counts)")
        #expect(await bot.core.comebacks(current: session) == 2)

        await bot.core.leave(bot)
        #expect(bot.core.current == nil && !bot.core.isUp)
        #expect(bot.stoppedCount.withLock { $0 } == 3, "each attempt torn down once")
        bot.core.restartMedia(bot)
        #expect(!bot.core.isRecovering, "no comeback once left")
    }

    @Test func leavingStopsAComebackThatKeepsFailing() async throws {
        let bot = ScriptedBot()
        try await bot.attempt(reusing: nil)
        bot.failing.withLock { $0 = 1_000_000 }
        bot.core.lost(.sessionEnded, bot) { _ in true }
        #expect(await waitUntil { bot.attempts.withLock { $0.count } >= 3 }, "the comeback retries")
        await bot.core.leave(bot)
        #expect(!bot.core.isRecovering && bot.core.gaveUp == nil, "stopped, not given up")
        bot.failing.withLock { $0 = 0 }
        do {
            try await bot.attempt(reusing: nil)
            Issue.record("an attempt began on a bot that left")
        } catch {}
    }

    @Test func aLossOfAnotherAttemptIsIgnored() async throws {
        let bot = ScriptedBot()
        try await bot.attempt(reusing: nil)
        bot.core.lost(.sessionEnded, bot) { _ in false }
        #expect(bot.core.isUp && !bot.core.isRecovering)
        await bot.core.leave(bot)
    }
}
