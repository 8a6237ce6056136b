import Foundation
public import Bot

/// `sfubot agent --config FILE`: a JSON file. Relative paths are relative to the file.
public struct AgentConfig: Codable, Sendable {
    /// The ECall API base, `<api>/app/api`.
    public var api: String
    public var apiId: String
    public var apiSecret: String
    /// The device identity key (`sfubot keys generate`).
    public var identity: String
    /// Where tokens and ids are kept (created 0600).
    public var session: String
    public var email: String?
    public var phoneNumber: String?
    public var displayName: String
    /// The login code, if known in advance (else it is asked for on the terminal).
    public var otp: String?
    public var janus: String
    public var janusApiSecret: String?
    /// The Web-STOMP URL. Without it, a `ws(s):` URL in `/credentials`' `tlsUrl` or
    /// `noneTlsUrl` (only the stand-in backend puts one there: ECall's are TURN URLs).
    public var stomp: String?
    /// `record` (default) or `play`.
    public var onInvite: String?
    /// With `play`: the file to play, looped, while the call lasts.
    public var playFile: String?
    /// With `record`: recordings go to `<recordings>/<callId>/`.
    public var recordings: String?
    /// How often `GET /call/active` is polled (invitations may go to phones only).
    public var pollSeconds: Double?
    /// As key host: how often the call key is rotated (ECall: 300 s).
    public var rotationSeconds: Double?
    /// How a recording call's media is received: `direct` (default, as `sfubot record`'s) or
    /// `webrtcbin` (`sfubot record --receive-path`).
    public var receivePath: String?

    /// `receive_path` read (checked by `load`).
    public var receive: ReceivePath { receivePath.flatMap(ReceivePath.init(rawValue:)) ?? .direct }

    public enum InviteAction: Sendable, Equatable { case record(directory: String), play(file: String) }

    public var action: InviteAction {
        get throws(AgentError) {
            switch onInvite ?? "record" {
            case "record": return .record(directory: recordings ?? "recordings")
            case "play":
                guard let playFile else { throw .config("on_invite play needs play_file") }
                return .play(file: playFile)
            case let other: throw .config("on_invite must be record or play, not \(other)")
            }
        }
    }

    /// PEM CA certificates (or a self-signed certificate) a `turns:` `tlsUrl` of `/credentials`
    /// must chain to; nil: `--turn-ca-file`, else the system's trust store.
    public var turnCAFile: String?

    /// STUN/TURN servers from the command line (`--ice-server`…), beside the TURN servers of
    /// ECall's `/credentials`; not part of the JSON.
    public var ice = ICEServers()

    enum CodingKeys: String, CodingKey {
        case api, apiId = "api_id", apiSecret = "api_secret", identity, session, email, phoneNumber = "phone_number"
        case displayName = "display_name", otp, janus, janusApiSecret = "janus_api_secret", stomp
        case onInvite = "on_invite", playFile = "play_file", recordings, pollSeconds = "poll_seconds", rotationSeconds = "rotation_seconds"
        case receivePath = "receive_path", turnCAFile = "turn_ca_file"
    }

    /// Reads the file; relative paths become relative to its folder.
    public static func load(_ path: String) throws(AgentError) -> AgentConfig {
        guard let data = FileManager.default.contents(atPath: path) else { throw .config("cannot read \(path)") }
        var c: AgentConfig
        do { c = try JSONDecoder().decode(AgentConfig.self, from: data) } catch { throw .config("\(path): \(error)") }
        guard c.email != nil || c.phoneNumber != nil else { throw .config("\(path): give email or phone_number") }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        func resolve(_ p: String) -> String { p.hasPrefix("/") ? p : base.appendingPathComponent(p).path }
        c.identity = resolve(c.identity)
        c.session = resolve(c.session)
        c.playFile = c.playFile.map(resolve)
        c.recordings = resolve(c.recordings ?? "recordings")
        c.turnCAFile = c.turnCAFile.map(resolve)
        if let r = c.receivePath, ReceivePath(rawValue: r) == nil { throw .config("\(path): receive_path must be webrtcbin or direct, not \(r)") }
        // A usage error now rather than a refused TURN server in the first call.
        do { try ICEServers(caFile: c.turnCAFile).checkCAFile(option: "turn_ca_file") } catch { throw .config("\(path): \(error)") }
        return c
    }
}
