import Bot
import Proof
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
    /// `POST /call/{id}/request-rejoin`: the backend asks the other participants for the key.
    func requestRejoin(callID: Int64) async throws -> CallRecord
    /// `POST /call/{id}/rejoin`, once a participant sent the key: the call's record, with the
    /// Janus room to join.
    func rejoin(callID: Int64) async throws -> CallRecord
    /// `GET /credentials`: TURN credentials (and the broker token) anew.
    func credentials() async throws -> Credentials
}

extension ECallClient: AgentBackend {}

/// Starts the bot in a call, recording or playing until the returned task is cancelled (then it
/// ends `.stopped`) or it fails. Called synchronously by the agent, so a test's stand-in sees
/// every start at once. `segment` is 0 for the first join, n for the n-th rejoin of the call.
protocol CallMedia: Sendable {
    func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, segment: Int, logger: Logger) -> Task<CallMediaEnd, Never>
}

/// How a call's media ended. Anything but `.stopped` while the call is on means the agent lost
/// the call: it rejoins if rejoining can help.
enum CallMediaEnd: Sendable, Equatable {
    /// The agent stopped it (the call ended, or the agent is stopping).
    case stopped
    /// It ended by itself, without an error.
    case ended
    /// It failed. `retryable`: Janus, the room or the media path failed (a rejoin may fix
    /// that); not: the input file or the recording folder is the problem.
    case failed(String, retryable: Bool)

    init(_ error: BotError) {
        switch error.category {
        case .inputMissing, .output: self = .failed(error.description, retryable: false)
        case .janus, .roomMissing, .media: self = .failed(error.description, retryable: true)
        }
    }
}

/// The real media: a `Recorder` writing `<recordings>/<callId>/` (a rejoin's segment n in
/// `<recordings>/<callId>/rejoin-<n>/`, so nothing already recorded is overwritten), or a
/// `Player` looping the file.
struct BotMedia: CallMedia {
    /// Signs every recording (the agent's device identity key by default: `sfubot agent`).
    var signingKey: SigningKey?

    func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, segment: Int, logger log: Logger) -> Task<CallMediaEnd, Never> {
        Task {
            do {
                switch action {
                case .record(let dir):
                    var out = URL(fileURLWithPath: dir).appendingPathComponent(String(callID))
                    if segment > 0 { out.appendPathComponent("rejoin-\(segment)") }
                    var recorder = Recorder(config: bot, directory: out)
                    recorder.signingKey = signingKey
                    let manifest = try await recorder.run()
                    log.info("call \(callID): \(manifest.feeds.count) track(s) recorded in \(out.path)")
                case .play(let file):
                    _ = try await Player(config: bot, file: file, loop: true).run()
                }
                return Task.isCancelled ? .stopped : .ended
            } catch {
                if Task.isCancelled { return .stopped }
                log.error("call \(callID): \(error)")
                return CallMediaEnd(BotError(error))
            }
        }
    }
}
