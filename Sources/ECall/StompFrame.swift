public import Foundation

/// One STOMP 1.2 frame: command, headers (in order; the first of a repeated name wins), body.
public struct StompFrame: Sendable, Equatable {
    public var command: String
    public var headers: [(String, String)]
    public var body: Data

    public init(_ command: String, _ headers: [(String, String)] = [], body: Data = Data()) {
        self.command = command
        self.headers = headers
        self.body = body
    }

    public subscript(name: String) -> String? { headers.first { $0.0 == name }?.1 }

    public static func == (a: StompFrame, b: StompFrame) -> Bool {
        a.command == b.command && a.body == b.body && a.headers.elementsEqual(b.headers) { $0 == $1 }
    }

    /// The frame on the wire. Header names and values are escaped except in CONNECT/CONNECTED
    /// (STOMP 1.2); a body gets `content-length`.
    public var encoded: String {
        let escape = command != "CONNECT" && command != "CONNECTED"
        var text = command + "\n"
        var hs = headers
        if !body.isEmpty, !hs.contains(where: { $0.0 == "content-length" }) { hs.append(("content-length", String(body.count))) }
        for (name, value) in hs {
            text += (escape ? Self.escape(name) : name) + ":" + (escape ? Self.escape(value) : value) + "\n"
        }
        return text + "\n" + String(decoding: body, as: UTF8.self) + "\0"
    }

    // Escaping works on Unicode scalars: as Characters, "\r\n" is one (and slipped through
    // unescaped, splitting its header), and so is ':' or '\\' followed by a combining mark.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case ":": out += "\\c"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func unescape(_ s: Substring) throws(StompParser.Malformed) -> String {
        var out = "", it = s.unicodeScalars.makeIterator()
        while let c = it.next() {
            guard c == "\\" else { out.unicodeScalars.append(c); continue }
            switch it.next() {
            case "\\": out += "\\"
            case "n": out += "\n"
            case "r": out += "\r"
            case "c": out += ":"
            default: throw .init(reason: "undefined escape in a header")
            }
        }
        return out
    }
}

/// Reads STOMP frames from a byte stream that may split or join them anywhere. Heart-beats
/// (bare end-of-lines between frames) are counted. A malformed frame is skipped up to its NUL
/// and reported; the stream goes on.
public struct StompParser: Sendable {
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { "malformed STOMP frame: \(reason)" }
    }

    public enum Event: Sendable, Equatable {
        case frame(StompFrame)
        case heartBeat
        case malformed(Malformed)
    }

    private var buffer: [UInt8] = []
    /// A malformed frame's NUL has not arrived yet: what comes until it is the rest of that
    /// frame, not a new one.
    private var skippingToNUL = false
    /// Frames larger than this are malformed (and skipped).
    public var maxFrameSize = 1 << 20

    public init() {}

    public mutating func append(_ bytes: some Sequence<UInt8>) -> [Event] {
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        if skippingToNUL, !skipPastNUL() { return events }
        while true {
            // Heart-beats: EOLs before a frame.
            var start = 0
            while start < buffer.count, buffer[start] == UInt8(ascii: "\n") || buffer[start] == UInt8(ascii: "\r") {
                if buffer[start] == UInt8(ascii: "\n") { events.append(.heartBeat) }
                start += 1
            }
            if start > 0 { buffer.removeFirst(start) }
            guard !buffer.isEmpty else { break }
            switch parseOne() {
            case .needMore:
                if buffer.count > maxFrameSize {
                    events.append(.malformed(.init(reason: "larger than \(maxFrameSize) bytes")))
                    skipPastNUL()
                    continue
                }
                return events
            case .frame(let f, let used):
                buffer.removeFirst(used)
                events.append(.frame(f))
            case .malformed(let m):
                events.append(.malformed(m))
                if !skipPastNUL() { return events }
            }
        }
        return events
    }

    /// Drops everything up to and including the next NUL; false if there is none yet (then
    /// the rest is dropped as it arrives).
    @discardableResult
    private mutating func skipPastNUL() -> Bool {
        if let nul = buffer.firstIndex(of: 0) {
            buffer.removeFirst(nul + 1)
            skippingToNUL = false
            return true
        }
        buffer.removeAll()
        skippingToNUL = true
        return false
    }

    private enum Step { case needMore, frame(StompFrame, Int), malformed(Malformed) }

    private func parseOne() -> Step {
        // The header block ends at the first blank line.
        var i = 0, lines: [Substring] = []
        var lineStart = 0
        var headerEnd: Int?
        while i < buffer.count {
            if buffer[i] == 0, headerEnd == nil { return .malformed(.init(reason: "NUL inside the headers")) }
            if buffer[i] == UInt8(ascii: "\n") {
                var end = i
                if end > lineStart, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                if end == lineStart { headerEnd = i + 1; break }
                guard let line = String(bytes: buffer[lineStart..<end], encoding: .utf8) else { return .malformed(.init(reason: "headers are not UTF-8")) }
                lines.append(Substring(line))
                lineStart = i + 1
            }
            i += 1
        }
        guard let headerEnd, let command = lines.first else { return .needMore }
        let escaped = command != "CONNECT" && command != "CONNECTED"
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.unicodeScalars.firstIndex(of: ":") else { return .malformed(.init(reason: "a header line without ':'")) }
            do {
                let name = escaped ? try StompFrame.unescape(line[..<colon]) : String(line[..<colon])
                let rest = line[line.unicodeScalars.index(after: colon)...]
                let value = escaped ? try StompFrame.unescape(rest) : String(rest)
                headers.append((name, value))
            } catch { return .malformed(error) }
        }
        let frame0 = StompFrame(String(command), headers)
        if let length = frame0["content-length"] {
            guard let n = Int(length), n >= 0, n <= maxFrameSize else { return .malformed(.init(reason: "bad content-length \(length)")) }
            guard buffer.count >= headerEnd + n + 1 else { return .needMore }
            guard buffer[headerEnd + n] == 0 else { return .malformed(.init(reason: "no NUL after content-length bytes")) }
            var f = frame0
            f.body = Data(buffer[headerEnd..<(headerEnd + n)])
            return .frame(f, headerEnd + n + 1)
        }
        guard let nul = buffer[headerEnd...].firstIndex(of: 0) else { return .needMore }
        var f = frame0
        f.body = Data(buffer[headerEnd..<nul])
        return .frame(f, nul + 1)
    }
}
