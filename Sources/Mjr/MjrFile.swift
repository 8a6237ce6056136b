public import Foundation

/// A Janus recording (`record.c`, header MJR00002): the 8-byte magic, a 2-byte big-endian
/// length and a JSON info line, then packets, each `"MEET"`, a 4-byte big-endian time in ms
/// since the first packet, a 2-byte big-endian length and one RTP packet as Janus received
/// it (sequence numbers and timestamps already made continuous by Janus).
///
/// Janus writes the info line when the first packet arrives, so a file with only the magic
/// is a recording that never got media. Reading stops at the first packet whose header or
/// body is cut or not where it should be (Janus killed mid-write, or a damaged tail):
/// everything before it is kept and `truncated` is set.
public struct MjrFile: Sendable {
    public enum Kind: String, Sendable, Codable { case audio, video }

    /// One packet as stored: where its RTP bytes are in `data`, and its time.
    public struct Packet: Sendable {
        /// Milliseconds since the file's first packet (Janus's monotonic clock).
        public var millis: UInt32
        public var range: Range<Int>
    }

    public let path: String
    public let kind: Kind
    /// `c`: the codec as Janus names it (`opus`, `h264`).
    public let codec: String
    /// `s`: when Janus created the recorder; `u`: when it wrote the first packet (wall clock).
    public let created: Date
    public let firstPacket: Date
    /// `e`: the publisher said its media is end-to-end encrypted (Janus's own flag; ECall apps
    /// do not set it, so it is reported, not relied on).
    public let e2eeFlag: Bool
    public let packets: [Packet]
    /// The file ended inside a packet or held bytes that are no packet: `packets` holds those before.
    public let truncated: Bool
    /// The whole file (mapped, not copied); packet ranges index into it.
    public let data: Data

    static let magic = Array("MJR00002".utf8)
    static let packetMagic = Array("MEET".utf8)

    /// Reads `path`; throws `MjrError` for what is no recording at all.
    ///
    /// Opened once, without blocking (a FIFO would hang a plain open), and only a regular file
    /// is read: the error names the real cause (no such file, a symbolic link loop, permission,
    /// a device or FIFO), not a guess from a failed read.
    public init(path: String) throws(MjrError) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT: throw .unreadable(path, "no such file")
            case ELOOP: throw .unreadable(path, "a loop of symbolic links")
            case EACCES, EPERM: throw .unreadable(path, "permission denied")
            case EISDIR: throw .folder(path)
            default: throw .unreadable(path, String(cString: strerror(code)))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(path, String(cString: strerror(errno))) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .folder(path)
        case S_IFCHR: throw .notRegular(path, "a character device")
        case S_IFBLK: throw .notRegular(path, "a block device")
        case S_IFIFO: throw .notRegular(path, "a FIFO")
        case S_IFSOCK: throw .notRegular(path, "a socket")
        default: throw .notRegular(path, "not a file")
        }
        // The file opened above, not whatever the path names by now.
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: "/proc/self/fd/\(fd)"), options: .alwaysMapped) } catch {
            throw .unreadable(path, "\((error as NSError).localizedDescription)")
        }
        try self.init(data: data, path: path)
    }

    public init(data: Data, path: String) throws(MjrError) {
        guard !data.isEmpty else { throw .empty(path) }
        let parsed = try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<Parsed, MjrError> in
            do throws(MjrError) { return .success(try Self.parse(raw, path: path)) } catch { return .failure(error) }
        }.get()
        self.path = path
        self.data = data
        kind = parsed.kind
        codec = parsed.codec
        created = Date(timeIntervalSince1970: Double(parsed.created) / 1e6)
        firstPacket = Date(timeIntervalSince1970: Double(parsed.firstPacket) / 1e6)
        e2eeFlag = parsed.e2ee
        packets = parsed.packets
        truncated = parsed.truncated
    }

    private struct Parsed {
        var kind: Kind, codec: String, created: Int64, firstPacket: Int64, e2ee: Bool
        var packets: [Packet], truncated: Bool
    }

    private static func parse(_ b: UnsafeRawBufferPointer, path: String) throws(MjrError) -> Parsed {
        guard b.count >= 8, b.starts(with: "MJR0000".utf8) else { throw .notMjr(path) }
        if b[7] == UInt8(ascii: "1") { throw .oldFormat(path) }
        guard b.starts(with: magic) else { throw .notMjr(path) }
        guard b.count >= 10 else { throw .badInfo(path, "no info line: the recording got no media") }
        let infoLength = Int(b[8]) << 8 | Int(b[9])
        guard infoLength > 0, 10 + infoLength <= b.count else { throw .badInfo(path, "info line cut short") }
        let info = Data(b[10..<(10 + infoLength)])
        guard let json = (try? JSONSerialization.jsonObject(with: info)) as? [String: Any] else {
            throw .badInfo(path, "info line is not JSON")
        }
        let kind: Kind
        switch json["t"] as? String {
        case "a": kind = .audio
        case "v": kind = .video
        case "d": throw .dataChannel(path)
        case let t: throw .unsupported(path, "a '\(t ?? "?")' stream")
        }
        let codec = (json["c"] as? String ?? "").lowercased()
        guard (kind == .audio && codec == "opus") || (kind == .video && codec == "h264") else {
            throw .unsupported(path, "\(kind.rawValue) in \(codec.isEmpty ? "an unnamed codec" : codec)")
        }
        let created = (json["s"] as? NSNumber)?.int64Value ?? 0
        let first = (json["u"] as? NSNumber)?.int64Value ?? created
        let e2ee = (json["e"] as? Bool) ?? false

        var packets: [Packet] = []
        packets.reserveCapacity(b.count / 100)
        var i = 10 + infoLength
        var truncated = false
        while i < b.count {
            // A packet header: "MEET", time, length; an RTP packet is at least 12 bytes.
            guard i + 10 <= b.count, b[i] == 0x4D, b[i + 1] == 0x45, b[i + 2] == 0x45, b[i + 3] == 0x54 else {
                truncated = true
                break
            }
            let millis = UInt32(b[i + 4]) << 24 | UInt32(b[i + 5]) << 16 | UInt32(b[i + 6]) << 8 | UInt32(b[i + 7])
            let length = Int(b[i + 8]) << 8 | Int(b[i + 9])
            let start = i + 10
            guard length >= 12, start + length <= b.count else {
                truncated = true
                break
            }
            packets.append(Packet(millis: millis, range: start..<(start + length)))
            i = start + length
        }
        return Parsed(kind: kind, codec: codec, created: created, firstPacket: first, e2ee: e2ee, packets: packets, truncated: truncated)
    }
}
