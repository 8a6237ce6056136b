import GStreamerKit

/// The H.264 an ECall room takes as it is (ECALL-WIRE §3): profile-level-ids 42e01f (constrained
/// baseline) and 640c1f (constrained high), level 3.1 at most, packetization-mode 1.
enum RoomVideoCodec {
    static let profiles: Set<String> = ["constrained-baseline", "constrained-high"]
    static let maxLevel = 3.1

    /// Whether a stream with these (discovered) caps can be sent without re-encoding.
    static func acceptsAsIs(_ caps: String) -> Bool {
        guard caps.hasPrefix("video/x-h264"),
              let profile = capsString("profile", in: caps), profiles.contains(profile),
              let level = capsString("level", in: caps).flatMap(Double.init) else { return false }
        return level <= maxLevel
    }
}
