import Bot
import ECall
import Foundation
import Logging

/// The ECall backend calls the agent makes once logged in. `ECallClient` is the real one; a test
/// can hold a reply to force an interleaving (e.g. `call_ended` while a join waits).
protocol AgentBackend: Sendable {
    var session: SessionState? { get async }
    func activeCalls() async throws -> [CallRecord]
    func participants(callID: Int64) async throws -> [Participant]
    func publicKeys(userIDs: [Int64]) async throws -> [String: String]
    func join(callID: Int64) async throws -> CallRecord
}

extension ECallClient: AgentBackend {}

/// Starts the bot in a call, recording or playing until the returned task is cancelled. Called
/// synchronously by the agent, so a test's stand-in sees every start at once.
protocol CallMedia: Sendable {
    func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, logger: Logger) -> Task<Void, Never>
}

/// The real media: a `Recorder` writing `<recordings>/<callId>/`, or a `Player` looping the file.
struct BotMedia: CallMedia {
    func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, logger log: Logger) -> Task<Void, Never> {
        Task {
            do {
                switch action {
                case .record(let dir):
                    let out = URL(fileURLWithPath: dir).appendingPathComponent(String(callID))
                    let manifest = try await Recorder(config: bot, directory: out).run()
                    log.info("call \(callID): \(manifest.feeds.count) track(s) recorded in \(out.path)")
                case .play(let file):
                    _ = try await Player(config: bot, file: file, loop: true).run()
                }
            } catch {
                if !Task.isCancelled { log.error("call \(callID): \(error)") }
            }
        }
    }
}
