import Bot
import FrameCrypto
import Janus

/// What the chaos driver needs of a bot: whether it is up, the fault hooks, and its comebacks.
protocol ChaosTarget: AnyObject, Sendable {
    var key: String { get }
    var recovery: any ComebackCounts { get }
    var session: JanusSession? { get }
    /// Joined and not in the middle of an attempt.
    var isUp: Bool { get }
    func dropConnection() async
    func restartMedia()
    /// Puts `key` on this bot's ring as the future key, current at Unix time `time`.
    func scheduleKey(_ key: CallKey, at time: Double)
}

extension FrameProtection {
    /// A rotation on this ring (ECALL-WIRE §4), with the key's own cipher pool.
    func schedule(_ key: CallKey, at time: Double) {
        if case .e2ee(let ring) = self { ring.schedule(key.withOwnCiphers(), at: time) }
    }
}

extension PublisherBot: ChaosTarget {
    var key: String { "p\(index)" }
    var isUp: Bool { core.isUp }
    var recovery: any ComebackCounts { core }
    var session: JanusSession? { core.current?.session }
    func dropConnection() async { await core.dropConnection() }
    func restartMedia() { core.restartMedia(self) }
    func scheduleKey(_ key: CallKey, at time: Double) { keyProtection.schedule(key, at: time) }
}

extension SubscriberBot: ChaosTarget {
    var key: String { "s\(index)" }
    var isUp: Bool { core.isUp }
    var recovery: any ComebackCounts { core }
    var session: JanusSession? { core.current?.session }
    func dropConnection() async { await core.dropConnection() }
    func restartMedia() { core.restartMedia(self) }
    func scheduleKey(_ key: CallKey, at time: Double) { keyProtection.schedule(key, at: time) }
}
