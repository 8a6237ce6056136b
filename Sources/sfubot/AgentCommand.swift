import ArgumentParser
import Bot
import ECallAgent
import FrameCrypto
import Foundation
import Telemetry
import Logging
import Proof

struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Be a full ECall participant: take invitations, join, record or play, follow key rotations.",
        discussion: """
            Logs in to the ECall backend with the device identity (sfubot keys generate), registers \
            it, listens on STOMP and polls GET /call/active. On an invitation it unwraps the call \
            key, joins the Janus room and records every participant into <recordings>/<callId>/ \
            (or plays play_file, with on_invite "play"). Key rotations are applied only when the \
            current key host wrapped them; when frames stop opening it asks the host for the key. \
            It leaves on call_ended/call_cancelled. Ctrl-C leaves every call, files finished.

            Config (JSON; paths relative to it): api, api_id, api_secret, identity, session, email \
            or phone_number, display_name, janus, and optionally otp, janus_api_secret, stomp (the \
            Web-STOMP URL; without it a ws(s): URL in /credentials, as only the stand-in gives), \
            on_invite, play_file, recordings, poll_seconds, rotation_seconds, turn_ca_file (the CA \
            file a turns: tlsUrl of /credentials must chain to; without it, the TURN CA file \
            option's, else the system's trust store).
            """)

    @Option(help: ArgumentHelp("The agent's JSON config.", valueName: "file"))
    var config: String

    /// Beside the TURN servers of ECall's `/credentials` (`--ice-transport-policy` applies to both).
    @OptionGroup var ice: ICEOptionsOf<IssuedTURN>
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var logOptions: LogOptions

    @OptionGroup var metricsOptions: MetricsOptions

    @Option(help: ArgumentHelp(
        "Append every call key to this file as it comes into use (first key, rotations, emergency keys, rejoins), one JSON line each ({call, key, from}), so recordings spanning rotations can be decrypted later. It holds keys in the clear: created 0600, refused if others can read it.",
        valueName: "file"))
    var keyLog: String?

    @Option(help: ArgumentHelp("Sign every recording with this key (PKCS#8 PEM, P-256 or Ed25519, 0600): checkpoints in proof.jsonl and a signed proof in manifest.json (`sfubot verify`). Default: the agent's ECall device identity key (the config's `identity`) when it is P-256; an RSA identity cannot sign, so its recordings are then unsigned (said at start).", valueName: "file"))
    var signingKey: String?

    func run() async throws {
        let log = logOptions.logger("sfubot.agent")
        SRTPPreload.run(log)
        let server = await metricsOptions.start(logger: log)
        defer { server?.stop() }
        do {
            var agentConfig = try AgentConfig.load(config)
            agentConfig.ice = try ice.servers()
            let agent = Agent(config: agentConfig, pipelines: try pipeline.library(), logger: log,
                              keyLog: try KeyLogOption.open(keyLog), signingKey: Self.signer(signingKey, config: agentConfig, logger: log))
            // Calls in progress finish their files before it ends.
            try await runCancellableOnSignals(grace: .seconds(30)) { try await agent.run() }
            print("agent: \(await agent.counters)")
        } catch let e as AgentError {
            let code: CLIFailure.Code = switch e.area {
            case .config: .config
            case .identity: .badKey
            case .backend, .stomp: .unreachable
            }
            CLIFailure(e.description, code: code).exit()
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }

    /// --signing-key, else the device identity key (P-256 PKCS#8, as `sfubot keys generate` writes it).
    static func signer(_ path: String?, config: AgentConfig, logger: Logger) -> SigningKey? {
        if let key = SigningKeyOption.load(path) {
            logger.info("recordings are signed by the key with fingerprint \(key.publicKey.fingerprint)")
            return key
        }
        do {
            let key = try config.identitySigningKey()
            logger.info("recordings are signed by the device identity key, fingerprint \(key.publicKey.fingerprint)")
            return key
        } catch {
            logger.notice("recordings are not signed: the device identity key cannot sign them (\(error)); give --signing-key")
            return nil
        }
    }
}
