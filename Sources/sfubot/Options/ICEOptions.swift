import ArgumentParser
import Bot
import Foundation
import PrivateIO

/// `--ice-server`, the TURN credentials and `--ice-transport-policy`: how a participant's
/// webrtcbin reaches Janus when UDP to it is blocked or NATed. One group for record, play,
/// load, serve (the server-wide default) and agent. No credential has a default or appears
/// in `--help`, a log line or an error.
typealias ICEOptions = ICEOptionsOf<OwnTURN>

/// Whether a command's participants get TURN servers from elsewhere than `--ice-server`.
protocol TURNSource { static var turnElsewhere: Bool { get } }
/// record, play, load, serve: `--ice-transport-policy relay` needs an `--ice-server turn(s):`.
enum OwnTURN: TURNSource { static var turnElsewhere: Bool { false } }
/// agent: ECall's `/credentials` gives TURN servers too; relay without `--ice-server` is fine.
enum IssuedTURN: TURNSource { static var turnElsewhere: Bool { true } }

struct ICEOptionsOf<Source: TURNSource>: ParsableArguments {
    @Option(name: .customLong("ice-server"), help: ArgumentHelp(
        "A STUN or TURN server, as WebRTC's iceServers: stun:HOST[:PORT], turn:HOST[:PORT][?transport=udp|tcp] (without a transport webrtcbin tries both), turns:HOST[:PORT] (TLS, default port 5349: sfubot does the TLS itself and verifies the server's certificate and HOST against --turn-ca-file). Repeatable.",
        valueName: "url"))
    var iceServers: [String] = []

    @Option(help: ArgumentHelp("TURN username (with --turn-password, or the user part of --turn-secret-file's credentials: default sfubot).", valueName: "name"))
    var turnUsername: String?

    @Option(help: ArgumentHelp("TURN password. Visible to other users in the process list: prefer --turn-credentials-file.", valueName: "password"))
    var turnPassword: String?

    @Option(help: ArgumentHelp("File (mode 0600) with the TURN username on its first line and the password on its second.", valueName: "file"))
    var turnCredentialsFile: String?

    @Option(help: ArgumentHelp(
        "File (mode 0600) with coturn's static-auth-secret (use-auth-secret): each connection gets REST API credentials, username EXPIRY:USER, valid 24 h.",
        valueName: "file"))
    var turnSecretFile: String?

    @Option(name: .customLong("turn-ca-file"), help: ArgumentHelp(
        "PEM file of the CA certificates (or a self-signed certificate) a turns: server's certificate must chain to. Without it, the system's trust store (/etc/ssl/certs).",
        valueName: "file"))
    var turnCAFile: String?

    @Option(help: ArgumentHelp("all: any candidate pair; relay: only through the TURN server, as iceTransportPolicy.", valueName: "all|relay"))
    var iceTransportPolicy: String = "all"

    func validate() throws {
        do { _ = try servers() } catch let e as ICEConfigError { throw ValidationError(e.description) }
    }

    /// The parsed servers and policy, with credentials from the options or files.
    func servers() throws -> ICEServers {
        guard let policy = ICEServers.Policy(rawValue: iceTransportPolicy) else {
            throw ValidationError("--ice-transport-policy takes all or relay, not \(iceTransportPolicy)")
        }
        var ice = ICEServers(servers: try iceServers.map { try ICEServer(parsing: $0) }, policy: policy, caFile: turnCAFile)
        ice.credential = try credential()
        ice.credentialsFile = turnCredentialsFile
        try ice.validate(turnElsewhere: Source.turnElsewhere)
        try ice.checkCAFile()
        return ice
    }

    private func credential() throws -> ICEServers.Credential {
        let given = [turnPassword != nil, turnCredentialsFile != nil, turnSecretFile != nil].filter { $0 }.count
        guard given <= 1 else { throw ValidationError("give one of --turn-password, --turn-credentials-file, --turn-secret-file") }
        if let turnPassword {
            guard let turnUsername, !turnUsername.isEmpty else { throw ValidationError("--turn-password needs --turn-username") }
            return .password(username: turnUsername, password: turnPassword)
        }
        if let path = turnCredentialsFile {
            guard turnUsername == nil else { throw ValidationError("--turn-credentials-file holds the username: drop --turn-username") }
            let lines = try Self.read(path, "--turn-credentials-file").split(whereSeparator: \.isNewline).map(String.init)
            guard lines.count == 2, !lines[0].isEmpty, !lines[1].isEmpty else {
                throw ValidationError("--turn-credentials-file \(path): needs two lines, the username and the password")
            }
            return .password(username: lines[0], password: lines[1])
        }
        if let path = turnSecretFile {
            let secret = try Self.read(path, "--turn-secret-file").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw ValidationError("--turn-secret-file \(path) is empty") }
            let user = turnUsername ?? "sfubot"
            guard !user.isEmpty, !user.contains(":") else { throw ValidationError("--turn-username for REST credentials cannot be empty or hold ':'") }
            return .sharedSecret(TURNSharedSecret(secret: Array(secret.utf8), user: user))
        }
        if turnUsername != nil { throw ValidationError("--turn-username needs --turn-password or --turn-secret-file") }
        return .none
    }

    /// A secret file: regular, 0600 (no one else can read it), small. The error names the
    /// file and what is wrong, never its contents.
    private static func read(_ path: String, _ option: String) throws -> String {
        let bytes: [UInt8]
        do { bytes = try PrivateFile.read(path, what: option, maxBytes: 4096).bytes } catch { throw ValidationError(error.description) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ValidationError("\(option) \(path) is not UTF-8 text") }
        return text
    }
}
