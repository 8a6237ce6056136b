import Bot
@testable import ECallAgent
import ECall
import FrameCrypto
import Foundation
import Logging
import Synchronization
import Locking

/// Call media a test scripts, one step per start (the last step repeats): it records what each
/// start was given (room, segment, the ring's sealing key at that moment).
final class ScriptedMedia: CallMedia {
    enum Step: Sendable {
        /// The real bot, against a Janus that is not there: it fails as a lost Janus does.
        case deadJanus
        /// Fails after a moment with this cause (retryable or not), without touching Janus.
        case fail(String, retryable: Bool)
        /// Runs until stopped, doing nothing.
        case idle
        /// The real bot (`BotMedia`): records or plays in the room it is given.
        case real
    }

    struct Start: Sendable {
        let room: Int64
        let segment: Int
        let key: CallKey?
        let ring: KeyRing?
    }

    private let steps: Locked<[Step]>
    private let log = Locked<[Start]>([])

    init(_ steps: [Step]) { self.steps = Locked(steps) }

    var starts: [Start] { log.withLock { $0 } }

    func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, segment: Int, logger: Logger) -> Task<CallMediaEnd, Never> {
        let ring: KeyRing? = if case .e2ee(let r) = bot.protection { r } else { nil }
        log.withLock { $0.append(Start(room: bot.room, segment: segment, key: ring?.sealingKey, ring: ring)) }
        let step = steps.withLock { s in s.count > 1 ? s.removeFirst() : s.first ?? .idle }
        switch step {
        case .deadJanus:
            var dead = bot
            dead.janusURL = "ws://127.0.0.1:9"
            return BotMedia().start(dead, action, callID: callID, segment: segment, logger: logger)
        case .fail(let why, let retryable):
            return Task {
                try? await Task.sleep(for: .milliseconds(200))
                return Task.isCancelled ? .stopped : .failed(why, retryable: retryable)
            }
        case .idle:
            return Task {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                return .stopped
            }
        case .real:
            return BotMedia().start(bot, action, callID: callID, segment: segment, logger: logger)
        }
    }
}

/// Signal messages one device received, from any task.
final class Inbox: Sendable {
    private final class Store: Sendable {
        let messages = Locked<[SignalMessage]>([])
    }
    private let store = Store()
    private let reader: Task<Void, Never>

    init(_ frames: AsyncStream<StompFrame>, answer: @escaping @Sendable (SignalMessage) async -> Void = { _ in }) {
        let store = self.store
        reader = Task {
            for await frame in frames {
                guard let m = try? SignalMessage.parse(frame.body) else { continue }
                store.messages.withLock { $0.append(m) }
                await answer(m)
            }
        }
    }

    deinit { reader.cancel() }

    func all(_ kind: SignalMessage.Kind) -> [SignalMessage] { store.messages.withLock { $0.filter { $0.kind == kind } } }
}

extension CallKey {
    func same(as other: CallKey?) -> Bool { other.map { $0.symmetricKey == symmetricKey } ?? false }
}
