public import Foundation

/// Which recording a chain belongs to, signed in every checkpoint (`recording`) from the first,
/// so that no chain (and no folder of media it proves) passes as another recording's. The same
/// for every owner of a recording (serve derives it from the job, which every instance reads).
public struct RecordingIdentity: Sendable, Equatable, Codable {
    /// The proof format the recorder writes now: 2 = every checkpoint carries `format`,
    /// `recording` and `instance`, and the last one `final`. Format 1 (before) named none.
    public static let format = 2

    /// The recording's id: serve's job id, or a random one `record` makes.
    public var id: String
    public var room: Int64
    /// The Janus URL it was recorded from, as manifest.json gives it.
    public var janus: String
    /// When the recording began (serve: when the job was created), ISO 8601.
    public var started: String
    /// serve's job id; nil for `record`.
    public var job: String?

    public init(id: String, room: Int64, janus: String, started: Date, job: String? = nil) {
        self.init(id: id, room: room, janus: janus, started: ProofTime.string(started), job: job)
    }

    public init(id: String, room: Int64, janus: String, started: String, job: String?) {
        (self.id, self.room, self.janus, self.started, self.job) = (id, room, janus, started, job)
    }

    /// As signed: `{"id","janus","job","room","started"}`.
    public var json: JSONValue {
        .object(["id": .string(id), "room": .number(Double(room)), "janus": .string(janus), "started": .string(started),
                 "job": job.map { .string($0) } ?? .null])
    }

    /// Read back from a checkpoint's or manifest proof's `recording`; nil if it is not one.
    public init?(json: JSONValue?) {
        guard let json, let id = json["id"]?.string, let room = json["room"]?.int, let janus = json["janus"]?.string,
              let started = json["started"]?.string, json.object?.count == 5 else { return nil }
        let job: String?
        switch json["job"] {
        case .string(let s): job = s
        case .null: job = nil
        default: return nil
        }
        self.init(id: id, room: Int64(room), janus: janus, started: started, job: job)
    }

    enum CodingKeys: String, CodingKey { case id, room, janus, started, job }

    /// `job` written as null when there is none, as in the checkpoints (the same five members).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(room, forKey: .room)
        try c.encode(janus, forKey: .janus)
        try c.encode(started, forKey: .started)
        try c.encode(job, forKey: .job)
    }

    /// One line for `verify`'s output.
    public var summary: String {
        "id \(id), room \(room), Janus \(janus), started \(started)" + (job.map { ", serve job \($0)" } ?? "")
    }
}
