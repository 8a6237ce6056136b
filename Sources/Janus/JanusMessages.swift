/// A JSEP (SDP) payload as Janus carries it.
public struct JSEP: Codable, Sendable, Equatable {
    public var type: String
    public var sdp: String
    public init(type: String, sdp: String) {
        self.type = type
        self.sdp = sdp
    }
}

/// A request to Janus (the top-level `janus` verbs).
public struct JanusRequest: Encodable, Sendable {
    public var janus: String
    public var transaction: String
    public var sessionID: Int64?
    public var handleID: Int64?
    public var plugin: String?
    public var body: JSON?
    public var jsep: JSEP?
    public var candidate: JSON?
    public var apisecret: String?
    public var token: String?

    enum CodingKeys: String, CodingKey {
        case janus, transaction, plugin, body, jsep, candidate, apisecret, token
        case sessionID = "session_id", handleID = "handle_id"
    }

    public init(_ janus: String, transaction: String, sessionID: Int64? = nil, handleID: Int64? = nil) {
        self.janus = janus
        self.transaction = transaction
        self.sessionID = sessionID
        self.handleID = handleID
    }
}

/// Anything Janus sends: replies (`success`, `ack`, `error`) and events.
public struct JanusMessage: Decodable, Sendable {
    public var janus: String
    public var transaction: String?
    public var sessionID: Int64?
    /// The handle an event is about.
    public var sender: Int64?
    public var data: JSON?
    public var plugindata: PluginData?
    public var jsep: JSEP?
    public var error: ErrorBody?
    public var candidate: JSON?
    /// `hangup` reason, `media` type, etc.
    public var reason: String?
    public var type: String?
    public var receiving: Bool?

    public struct PluginData: Decodable, Sendable {
        public var plugin: String
        public var data: JSON
    }

    public struct ErrorBody: Decodable, Sendable, Equatable {
        public var code: Int
        public var reason: String
    }

    enum CodingKeys: String, CodingKey {
        case janus, transaction, sender, data, plugindata, jsep, error, candidate, reason, type, receiving
        case sessionID = "session_id"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        janus = try c.decode(String.self, forKey: .janus)
        transaction = try c.decodeIfPresent(String.self, forKey: .transaction)
        sessionID = try c.decodeIfPresent(JSON.self, forKey: .sessionID)?.int
        sender = try c.decodeIfPresent(JSON.self, forKey: .sender)?.int
        data = try c.decodeIfPresent(JSON.self, forKey: .data)
        plugindata = try c.decodeIfPresent(PluginData.self, forKey: .plugindata)
        jsep = try c.decodeIfPresent(JSEP.self, forKey: .jsep)
        error = try c.decodeIfPresent(ErrorBody.self, forKey: .error)
        candidate = try c.decodeIfPresent(JSON.self, forKey: .candidate)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        type = try c.decodeIfPresent(String.self, forKey: .type)
        receiving = try c.decodeIfPresent(Bool.self, forKey: .receiving)
    }

    /// A plugin's own error inside a successful Janus reply (`error_code` / `error`).
    public var pluginError: JanusError? {
        guard let d = plugindata?.data, let code = d["error_code"]?.int else { return nil }
        return .plugin(code: Int(code), reason: d["error"]?.string ?? "unknown")
    }
}

/// What a plugin request produced: the plugin's data and any JSEP.
public struct PluginReply: Sendable {
    public var data: JSON
    public var jsep: JSEP?
}

/// An event Janus pushed about one handle, outside any request of ours.
public enum HandleEvent: Sendable {
    /// Plugin event (e.g. VideoRoom publishers joining or leaving, a subscriber's `updated` offer).
    case plugin(data: JSON, jsep: JSEP?)
    /// A remote ICE candidate (`trickle`); `nil` candidate means Janus finished gathering.
    case trickle(mline: Int, candidate: String?)
    case webrtcUp
    case media(type: String, receiving: Bool)
    case hangup(reason: String)
    case slowLink
    case detached
    /// The WebSocket dropped and the session was claimed again over a new one: the handle and
    /// its PeerConnection survived, but events Janus sent meanwhile were lost (a roster should
    /// ask for the participants again).
    case reclaimed
}
