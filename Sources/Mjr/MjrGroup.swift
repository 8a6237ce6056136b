import Foundation

/// The `.mjr` files of one publisher that go into one output: Janus names them
/// `videoroom-<room>-user-<id>-<µs>-audio-0.mjr` (the time differs per stream), so files that
/// share a name up to `-<time>-audio-<m>`/`-video-<m>` are one publisher's; an audio and a
/// video file among them whose first packets are within 60 s of each other are one output.
public struct MjrGroup: Sendable {
    /// The shared name, for the output file's.
    public var base: String
    /// The Janus user id from the name, if it has Janus's form.
    public var sender: String?
    /// One file, or an audio and a video file.
    public var files: [MjrFile]

    /// `files` grouped, in the order their names first appear.
    public static func of(_ files: [MjrFile]) -> [MjrGroup] {
        var stems: [String: [MjrFile]] = [:]
        var order: [String] = []
        for f in files {
            let s = stem(f.path)
            if stems[s] == nil { order.append(s) }
            stems[s, default: []].append(f)
        }
        var groups: [MjrGroup] = []
        for s in order {
            let sender = senderID(s)
            var audio = stems[s]!.filter { $0.kind == .audio }.sorted { $0.created < $1.created }
            var video = stems[s]!.filter { $0.kind == .video }.sorted { $0.created < $1.created }
            while let v = video.first {
                video.removeFirst()
                if let k = audio.firstIndex(where: { abs($0.firstPacket.timeIntervalSince(v.firstPacket)) < 60 }) {
                    groups.append(MjrGroup(base: s, sender: sender, files: [audio.remove(at: k), v]))
                } else {
                    groups.append(MjrGroup(base: s, sender: sender, files: [v]))
                }
            }
            groups += audio.map { MjrGroup(base: s, sender: sender, files: [$0]) }
        }
        return groups
    }

    static func stem(_ path: String) -> String {
        var name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        for pattern in [#"-(audio|video)(-[0-9]+)?$"#, #"-[0-9]{13,}$"#] {
            if let r = name.range(of: pattern, options: .regularExpression) { name.removeSubrange(r) }
        }
        return name.isEmpty ? "recording" : name
    }

    /// `<id>` of Janus's `videoroom-<room>-user-<id>`.
    static func senderID(_ stem: String) -> String? {
        guard let r = stem.range(of: "-user-") else { return nil }
        let id = stem[r.upperBound...]
        return id.isEmpty ? nil : String(id)
    }
}
