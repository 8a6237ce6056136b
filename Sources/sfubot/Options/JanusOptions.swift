import ArgumentParser
import Foundation
import Janus
import PrivateIO

/// `--janus`, `--api-secret` (or its file or environment form), `--janus-token`: the Janus a command talks to and its credentials.
/// One group for every command that reaches Janus (record, play, load, room, serve), so the
/// names and defaults cannot drift apart again.
struct JanusOptions: ParsableArguments {
    @Option(help: "Janus WebSocket URL.")
    var janus = "ws://127.0.0.1:8188"

    @Option(help: ArgumentHelp(
        "Janus API secret, if the server sets one. Visible to other users in the process list: prefer --api-secret-file or SFUBOT_JANUS_API_SECRET in the environment.",
        valueName: "secret"))
    var apiSecret: String?

    @Option(help: ArgumentHelp("File (mode 0600) holding the Janus API secret on its first line.", valueName: "file"))
    var apiSecretFile: String?

    // `--token` was this option's name in record, play and load before serve's `--janus-token`
    // became the one name: still read, no longer shown.
    @Option(name: [.customLong("janus-token"), .customLong("token")],
            help: ArgumentHelp("Janus auth token, if the server requires one (formerly --token).", valueName: "token"))
    var janusToken: String?

    /// Also takes the secret from --api-secret-file or SFUBOT_JANUS_API_SECRET into `apiSecret`,
    /// so every user of `sessionOptions` gets it whichever way it came.
    mutating func validate() throws {
        try OptionCheck.url(janus, "--janus")
        if let path = apiSecretFile {
            guard apiSecret == nil else { throw ValidationError("give one of --api-secret, --api-secret-file") }
            let bytes: [UInt8]
            do { bytes = try PrivateFile.read(path, what: "--api-secret-file", maxBytes: 4096).bytes } catch { throw ValidationError(error.description) }
            let line = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            guard !line.isEmpty else { throw ValidationError("--api-secret-file \(path) is empty: put the secret on its first line") }
            apiSecret = line
        } else if apiSecret == nil, let secret = ProcessInfo.processInfo.environment["SFUBOT_JANUS_API_SECRET"], !secret.isEmpty {
            apiSecret = secret
        }
    }

    /// Session options with these credentials; reconnection as the caller sets it.
    var sessionOptions: JanusSession.Options { JanusSession.Options(apiSecret: apiSecret, token: janusToken) }
}

/// `--rejoin-timeout`: how long a participant that lost Janus keeps coming back. The same
/// default everywhere: a recorder exists not to lose a call, so it outlasts a Janus restart
/// or a network outage of several minutes; Ctrl-C ends the wait sooner.
struct ComebackOptions: ParsableArguments {
    static let defaultSeconds: Double = 600

    @Option(help: ArgumentHelp(
        "After losing Janus (WebSocket, session, restart, media path), keep trying to come back this long before giving up (record/play: exit 69; serve: the job fails). 0: do not come back.",
        valueName: "seconds"))
    var rejoinTimeout: Double = ComebackOptions.defaultSeconds

    func validate() throws {
        try OptionCheck.seconds(rejoinTimeout, "--rejoin-timeout", zeroAllowed: true)
    }

    /// Checked in validate(); 0 turns coming back off.
    var duration: Duration { ((try? OptionCheck.seconds(rejoinTimeout, "--rejoin-timeout", zeroAllowed: true)) ?? nil) ?? .zero }
}
