/// A publisher in a VideoRoom as the room announces it.
public struct RoomPublisher: Sendable, Equatable {
    public var id: Int64
    public var display: String
    /// The streams it publishes (`type`: audio/video, `mid`, `codec`).
    public var streams: [Stream]

    public struct Stream: Sendable, Equatable {
        public var type: String
        public var mid: String
        public var codec: String?
    }

    /// ECall's display is `"<userId>:<DisplayName>"`, split on the first `:`.
    public var userID: String {
        guard let i = display.firstIndex(of: ":") else { return display }
        return String(display[..<i])
    }
    public var displayName: String {
        guard let i = display.firstIndex(of: ":") else { return display }
        return String(display[display.index(after: i)...])
    }

    init?(_ j: JSON) {
        guard let id = j["id"]?.int else { return nil }
        self.id = id
        display = j["display"]?.string ?? ""
        streams = (j["streams"]?.array ?? []).compactMap { s in
            guard let type = s["type"]?.string, let mid = s["mid"]?.string else { return nil }
            if s["disabled"]?.bool == true { return nil }
            return Stream(type: type, mid: mid, codec: s["codec"]?.string)
        }
    }
}

/// One stream of a multistream subscription: which `mid` carries which publisher's media.
public struct SubscribedStream: Sendable, Equatable {
    public var mid: String
    public var feedID: Int64?
    public var feedDisplay: String?
    public var type: String
    public var active: Bool
}

/// What VideoRoom tells a handle, decoded from its plugin events.
public enum VideoRoomEvent: Sendable {
    case publishers([RoomPublisher])
    case unpublished(Int64)
    case leaving(Int64)
    /// The room was destroyed (`{"videoroom": "destroyed"}`): the call is over for everyone in it.
    case destroyed
    /// The subscription changed; Janus sent a new offer to answer with `start`.
    case updated(streams: [SubscribedStream], offer: JSEP?)
    case other(JSON)

    public init(data: JSON, jsep: JSEP?) {
        if let list = data["publishers"]?.array {
            self = .publishers(list.compactMap(RoomPublisher.init))
        } else if let id = data["unpublished"]?.int {
            self = .unpublished(id)
        } else if let id = data["leaving"]?.int {
            self = .leaving(id)
        } else if data["videoroom"]?.string == "destroyed" {
            self = .destroyed
        } else if data["videoroom"]?.string == "updated" || data["videoroom"]?.string == "attached" {
            self = .updated(streams: VideoRoom.streams(in: data), offer: jsep)
        } else {
            self = .other(data)
        }
    }
}

/// Typed VideoRoom requests over a handle, as the ECall apps make them (ECALL-WIRE §6).
public enum VideoRoom {
    public static let plugin = "janus.plugin.videoroom"

    /// ECall's room: H.264 video, Opus audio, up to 200 publishers, 128 kbit/s capped.
    public struct RoomOptions: Sendable {
        public var publishers = 200
        public var bitrate = 128_000
        public var videoCodec = "h264"
        /// Janus records every publisher itself (`record`), as `.mjr` files in `recDir` (on the
        /// Janus host; Janus's working folder if nil). In an E2EE room they hold ciphertext:
        /// `sfubot mjr decrypt` opens them.
        public var record = false
        public var recDir: String? = nil
        public init() {}
    }

    /// Creates a room (`create`); returns its id. With `room` nil Janus picks one.
    /// VideoRoom's error for a publisher id already in the room (`JANUS_VIDEOROOM_ERROR_ID_EXISTS`).
    public static let idTakenCode = 436

    public static func createRoom(_ h: JanusHandle, room: Int64? = nil, options: RoomOptions = .init()) async throws(JanusError) -> Int64 {
        var body: [String: JSON] = [
            "request": "create", "video": true, "videocodec": .string(options.videoCodec),
            "publishers": .int(Int64(options.publishers)), "bitrate": .int(Int64(options.bitrate)), "bitrate_cap": true,
        ]
        if let room { body["room"] = .int(room) }
        if options.record { body["record"] = true }
        if let dir = options.recDir { body["rec_dir"] = .string(dir) }
        let reply = try await h.message(.object(body))
        guard let id = reply.data["room"]?.int else { throw .protocolViolation("create gave no room id") }
        return id
    }

    public static func exists(_ h: JanusHandle, room: Int64) async throws(JanusError) -> Bool {
        try await h.message(["request": "exists", "room": .int(room)]).data["exists"]?.bool ?? false
    }

    public struct Joined: Sendable {
        public var id: Int64
        public var privateID: Int64?
        public var publishers: [RoomPublisher]
    }

    /// Joins as a publisher (`join`, `ptype: publisher`); media follows with `configure`.
    /// A bot that only records joins this way too, to hear publishers come and go. `id` asks
    /// for a publisher id (a participant coming back asks for its old one); Janus refuses one
    /// that is taken (`idTakenCode`).
    public static func joinAsPublisher(_ h: JanusHandle, room: Int64, display: String, id: Int64? = nil) async throws(JanusError) -> Joined {
        var body: [String: JSON] = ["request": "join", "ptype": "publisher", "room": .int(room), "display": .string(display)]
        if let id { body["id"] = .int(id) }
        let reply = try await h.message(.object(body))
        guard let id = reply.data["id"]?.int else { throw .protocolViolation("join gave no publisher id") }
        return Joined(id: id, privateID: reply.data["private_id"]?.int,
                      publishers: (reply.data["publishers"]?.array ?? []).compactMap(RoomPublisher.init))
    }

    /// Publishes with an offer (`configure`); returns Janus's answer.
    public static func publish(_ h: JanusHandle, offer: JSEP, audio: Bool = true, video: Bool) async throws(JanusError) -> JSEP {
        var body: [String: JSON] = ["request": "configure", "audio": .bool(audio), "video": .bool(video)]
        if video { body["videocodec"] = "h264" }
        let reply = try await h.message(.object(body), jsep: offer)
        guard let answer = reply.jsep else { throw .protocolViolation("configure gave no answer") }
        return answer
    }

    public static func leave(_ h: JanusHandle) async {
        _ = try? await h.message(["request": "leave"])
    }

    /// Joins as a multistream subscriber to `feeds` on this one handle; returns Janus's offer.
    public static func subscribe(_ h: JanusHandle, room: Int64, feeds: [Int64], privateID: Int64?) async throws(JanusError) -> (streams: [SubscribedStream], offer: JSEP) {
        var body: [String: JSON] = [
            "request": "join", "ptype": "subscriber", "room": .int(room), "use_msid": true,
            "streams": .array(feeds.map { ["feed": .int($0)] }),
        ]
        if let privateID { body["private_id"] = .int(privateID) }
        let reply = try await h.message(.object(body))
        guard let offer = reply.jsep else { throw .protocolViolation("subscriber join gave no offer") }
        return (streams(in: reply.data), offer)
    }

    /// Adds feeds to a running subscription (`subscribe`); Janus answers with a new offer.
    public static func add(_ h: JanusHandle, feeds: [Int64]) async throws(JanusError) -> (streams: [SubscribedStream], offer: JSEP?) {
        let reply = try await h.message(["request": "subscribe", "streams": .array(feeds.map { ["feed": .int($0)] })])
        return (streams(in: reply.data), reply.jsep)
    }

    /// Drops feeds from a subscription (`unsubscribe`).
    public static func remove(_ h: JanusHandle, feeds: [Int64]) async throws(JanusError) -> (streams: [SubscribedStream], offer: JSEP?) {
        let reply = try await h.message(["request": "unsubscribe", "streams": .array(feeds.map { ["feed": .int($0)] })])
        return (streams(in: reply.data), reply.jsep)
    }

    /// Answers a subscriber offer (`start`).
    public static func start(_ h: JanusHandle, answer: JSEP) async throws(JanusError) {
        _ = try await h.message(["request": "start"], jsep: answer)
    }

    /// Asks the publisher behind a subscriber's `mid` for a keyframe: `configure` with
    /// `streams: [{mid, send: true}]`, which VideoRoom answers with a PLI to that publisher
    /// ("Restoring video for subscriber"; a stream already sent goes on unchanged). Janus 1.1
    /// has no subscriber `keyframe` option, and a recvonly peer's RTCP PLI is unreliable: Janus
    /// reads a compound RTCP packet as about the m-line of its first report block's SSRC, so a
    /// PLI behind an audio report block is dropped and one behind another feed's video asks the
    /// wrong publisher (src/ice.c, `janus_rtcp_get_receiver_ssrc`).
    public static func requestKeyFrame(_ h: JanusHandle, mid: String) async throws(JanusError) {
        _ = try await h.message(["request": "configure", "streams": [["mid": .string(mid), "send": true]]])
    }

    static func streams(in data: JSON) -> [SubscribedStream] {
        (data["streams"]?.array ?? []).compactMap { s in
            guard let mid = s["mid"]?.string else { return nil }
            return SubscribedStream(
                mid: mid, feedID: s["feed_id"]?.int, feedDisplay: s["feed_display"]?.string,
                type: s["type"]?.string ?? "?", active: s["active"]?.bool ?? true)
        }
    }
}
