import ECall
import Foundation
import Testing

/// STOMP 1.2 framing: escaping, frames split and joined anywhere, heart-beats, bad input.
struct StompParserTests {
    func parse(_ chunks: [String]) -> [StompParser.Event] {
        var p = StompParser()
        return chunks.flatMap { p.append($0.utf8) }
    }

    @Test func roundTripsWithEscapedHeadersAndABodyHoldingNUL() {
        let f = StompFrame("MESSAGE", [("destination", "/exchange/ecall.signal.out/7"), ("odd:name", "line1\nline2\\x")], body: Data("a\0b".utf8))
        #expect(parse([f.encoded]) == [.frame(f + [("content-length", "3")])])
        #expect(f.encoded.contains("odd\\cname:line1\\nline2\\\\x"))
        // CONNECT headers are not escaped (STOMP 1.2).
        #expect(StompFrame("CONNECT", [("passcode", "a:b")]).encoded.contains("passcode:a:b\n"))
    }

    @Test func framesSplitAnywhereAndJoinedAreAllRead() {
        let frames = (0..<5).map { StompFrame("MESSAGE", [("subscription", "sub-\($0)")], body: Data("{\"n\":\($0)}".utf8)) }
        let wire = frames.map(\.encoded).joined(separator: "\n")  // heart-beats between frames
        for size in [1, 2, 7, 64, wire.utf8.count] {
            let bytes = Array(wire.utf8)
            var p = StompParser(), events: [StompParser.Event] = []
            for start in stride(from: 0, to: bytes.count, by: size) { events += p.append(bytes[start..<min(start + size, bytes.count)]) }
            let got = events.compactMap { if case .frame(let f) = $0 { f["subscription"] } else { nil } }
            #expect(got == frames.map { $0["subscription"] }, "chunks of \(size)")
            #expect(events.filter { $0 == .heartBeat }.count == 4)
        }
    }

    @Test func malformedFramesAreReportedAndTheStreamGoesOn() {
        let good = StompFrame("MESSAGE", [("subscription", "s")], body: Data("ok".utf8)).encoded
        let events = parse([
            "MESSAGE\nno colon here\n\nx\0",
            "MESSAGE\nbad:escape\\q\n\n\0",
            "MESSAGE\ncontent-length:99999999\n\n\0",
            "MESSAGE\ncontent-length:1\n\nxy\0",
            good,
        ])
        #expect(events.filter { if case .malformed = $0 { true } else { false } }.count == 4, "\(events)")
        #expect(events.last == .frame(StompFrame("MESSAGE", [("subscription", "s"), ("content-length", "2")], body: Data("ok".utf8))))
    }

    /// Found by FuzzStomp: a malformed frame whose NUL had not arrived yet was forgotten, so
    /// the rest of it (a body that looks like a frame) was read as a frame of its own.
    @Test func theRestOfAMalformedFrameIsDroppedWhenItArrivesLater() {
        let good = StompFrame("RECEIPT", [("receipt-id", "1")])
        let split = parse(["MESSAGE\nno colon here\n\n", "MESSAGE\nsubscription:forged\n\n{}\0", good.encoded])
        #expect(split.count == 2 && split.last == .frame(good), "\(split)")
        if case .malformed(let m) = split.first { #expect(m.reason == "a header line without ':'") } else { Issue.record("\(split)") }
        // Bytes that are not UTF-8, split anywhere, are one malformed frame, as in one piece.
        let bytes: [UInt8] = [0x3D, 0xA7, 0x0A, 0xF1, 0xA7, 0x0A]
        var whole = StompParser(), chunked = StompParser()
        #expect(bytes.indices.flatMap { chunked.append(bytes[$0...$0]) } == whole.append(bytes))
    }

    /// Found by FuzzStomp: Swift takes "\r\n" as one Character, so a header value holding CR LF
    /// went out unescaped and split its header (a value could inject headers), and a ':' or
    /// '\\' followed by a combining mark was not seen as one. STOMP escapes bytes, not graphemes.
    @Test func escapingWorksOnScalarsNotCharacters() {
        let f = StompFrame("SEND", [("token", "a\r\nforged:1"), ("name\u{301}:\u{301}", "\\\u{301}")])
        #expect(f.encoded.hasPrefix("SEND\ntoken:a\\r\\nforged\\c1\n"), "\(f.encoded.debugDescription)")
        #expect(parse([f.encoded]) == [.frame(f)])
        // A colon followed by a combining mark still ends the header name.
        #expect(parse(["MESSAGE\na:\u{301}b\n\n\0"]) == [.frame(StompFrame("MESSAGE", [("a", "\u{301}b")]))])
        // An escape followed by a combining mark is that escape, then the mark.
        #expect(parse(["MESSAGE\na:\\n\u{301}\n\n\0"]) == [.frame(StompFrame("MESSAGE", [("a", "\n\u{301}")]))])
    }

    @Test func randomBytesNeverCrashTheParser() async {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("MESSAGE\n:\\\0content-length:5abc\r".utf8)
        for i in 0..<20_000 {
            // Yields now and then: the tests share a pool of one thread per core (2 on CI), and a
            // loop that holds one for seconds delays the timers of every other test.
            if i % 256 == 0 { await Task.yield() }
            var p = StompParser()
            p.maxFrameSize = 256
            let n = Int.random(in: 0..<300, using: &rng)
            let bytes = (0..<n).map { _ in Bool.random() ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng) }
            _ = p.append(bytes)
            _ = p.append(StompFrame("RECEIPT").encoded.utf8)
        }
    }
}

extension StompFrame {
    static func + (f: StompFrame, extra: [(String, String)]) -> StompFrame {
        var g = f
        g.headers += extra
        return g
    }
}
