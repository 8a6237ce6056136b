import Foundation
import Janus
import Logging

/// A `Bridge`'s state, in one actor: the first room's roster (a session of its own, rejoined as
/// any relay's, `RoomFollower`) and, per participant id, the task that bridges them.
actor BridgeRoom: RoomFollower {
    let bridge: Bridge
    let config: BotConfig
    let status: RelayStatus
    let log: Logger
    var session: JanusSession?
    var roster: RoomRoster?
    var lostSink: AsyncStream<BotError>.Continuation?

    struct Bridged {
        let display: String
        let input: RoomInput
        let task: Task<Bridge.Report.Bridged, Never>
    }

    /// By participant id: the ECall user id, else the feed id.
    var bridged: [String: Bridged] = [:]
    /// Tasks that ended (left for good): their reports.
    var ended: [Bridge.Report.Bridged] = []

    init(_ bridge: Bridge) {
        self.bridge = bridge
        config = bridge.from
        status = bridge.status
        log = relayLogger(bridge.from)
    }

    func run(for duration: Duration?) async throws(BotError) -> Bridge.Report {
        try await followToEnd(for: duration)
        return Bridge.Report(bridged: ended.sorted { $0.participant < $1.participant }, rejoins: status.snapshot.comebacks)
    }

    static func id(of p: RoomPublisher) -> String { p.display.contains(":") ? p.userID : String(p.id) }

    func start() async throws {
        let present = try await joinRoom()
        // `sending` (and `sendingSince`, serve's relay.started) once a participant's frames reach
        // the other room: joining the first room's roster sends nothing yet.
        status.set(.waiting, destination: destination)
        await relayLogged(present)
    }

    /// Each participant publishing audio who is not bridged yet starts being bridged.
    func relayLogged(_ list: [RoomPublisher]) async {
        for p in list where p.streams.contains(where: { $0.type == "audio" }) {
            let id = Self.id(of: p)
            guard bridged[id] == nil, bridge.only.map({ $0 == id || $0 == String(p.id) }) ?? true else { continue }
            let protection: FrameProtection
            do { protection = try await bridge.protection(p.display) } catch {
                log.error("cannot bridge participant \(id): \(error)")
                continue
            }
            var to = bridge.to
            to.display = p.display
            to.protection = protection
            let (status, destination) = (status, destination)
            let input = RoomInput(config: bridge.from, participant: id, pauses: bridge.pauses) { status.outputUp(destination: destination) }
            let player = Player(config: to, source: .room(input))
            let display = p.display
            log.info("bridging participant \(id) '\(display)' into room \(to.room)")
            let task = Task {
                var report = Bridge.Report.Bridged(participant: id, display: display)
                do { report.sent = try await player.run() } catch where !BotError(error).isStopped { report.error = "\(error)" } catch {}
                report.opened = input.report
                return report
            }
            bridged[id] = Bridged(display: display, input: input, task: task)
        }
    }

    /// Left: their publisher in the other room stays for `leaveGrace` (they may come back on a
    /// new feed, which their `RoomInput` follows), then leaves.
    func left(_ p: RoomPublisher) async {
        let id = Self.id(of: p)
        guard bridged[id] != nil else { return }
        let grace = bridge.leaveGrace
        Task { [weak self] in
            try? await Task.sleep(for: grace)
            await self?.expire(id)
        }
    }

    private func expire(_ id: String) async {
        guard let b = bridged[id], let roster else { return }
        if await roster.current.contains(where: { Self.id(of: $0) == id }) { return }
        log.info("participant \(id) did not come back within \(bridge.leaveGrace): their publisher leaves room \(bridge.to.room)")
        bridged[id] = nil
        b.task.cancel()
        ended.append(await b.task.value)
    }

    func cameBack() { status.set(status.snapshot.sendingSince == nil ? .waiting : .sending) }

    var destination: String { "room \(bridge.to.room)" }

    /// The roster's session goes; the bridged participants go on (each has sessions of its own).
    func dropSession() async {
        await roster?.leave(announce: false)
        roster = nil
        await session?.close()
        session = nil
    }

    func finish() async {
        for b in bridged.values { b.task.cancel() }
        for (_, b) in bridged { ended.append(await b.task.value) }
        bridged = [:]
        await roster?.leave()
        await session?.close()
        status.set(.done)
    }
}
