import ArgumentParser
import Janus

/// `--janus`, `--api-secret`, `--janus-token`: the Janus a command talks to and its credentials.
/// One group for every command that reaches Janus (record, play, load, room, serve), so the
/// names and defaults cannot drift apart again.
struct JanusOptions: ParsableArguments {
    @Option(help: "Janus WebSocket URL.")
    var janus = "ws://127.0.0.1:8188"

    @Option(help: ArgumentHelp("Janus API secret, if the server sets one.", valueName: "secret"))
    var apiSecret: String?

    // `--token` was this option's name in record, play and load before serve's `--janus-token`
    // became the one name: still read, no longer shown.
    @Option(name: [.customLong("janus-token"), .customLong("token")],
            help: ArgumentHelp("Janus auth token, if the server requires one (formerly --token).", valueName: "token"))
    var janusToken: String?

    func validate() throws {
        try OptionCheck.url(janus, "--janus")
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
