import ECall
import Foundation
import FuzzSupport

// libFuzzer target (`make fuzz`): the STOMP parser on a byte stream. The same bytes split into
// chunks must give the same events as in one piece, and every frame read must survive its own
// encoding. No main: libFuzzer's drives this function.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStomp(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))

    var whole = StompParser()
    let events = whole.append(input)

    // Chunk boundaries come from the bytes themselves, so a crash reproduces from its file.
    // Each chunk rescans what is buffered: only short inputs get small chunks.
    let hash = input.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 }
    let chunk = size <= 256 ? 1 + Int(hash % 16) : max(1, size / 8) + Int(hash % 16)
    var split = StompParser(), splitEvents: [StompParser.Event] = []
    for start in stride(from: 0, to: size, by: chunk) { splitEvents += split.append(input[start..<min(start + chunk, size)]) }
    check(splitEvents == events, "chunks of \(chunk) bytes read differently: \(splitEvents) vs \(events)")

    for case .frame(let f) in events { checkRoundTrip(f) }

    // A small frame limit exercises the oversize path (outcomes depend on chunking there).
    var small = StompParser()
    small.maxFrameSize = 64
    for start in stride(from: 0, to: size, by: 32) { _ = small.append(input[start..<min(start + 32, size)]) }
    return 0
}

/// A frame read from the wire, encoded again, reads back as itself (plus the content-length
/// the encoder adds). CONNECT/CONNECTED headers are not escaped (STOMP 1.2), and commands
/// never are, so a carriage return at the end of one of those cannot survive: skipped.
func checkRoundTrip(_ f: StompFrame) {
    guard String(data: f.body, encoding: .utf8) != nil, !f.command.contains("\r") else { return }
    if f.command == "CONNECT" || f.command == "CONNECTED", f.headers.contains(where: { $0.0.hasSuffix("\r") || $0.1.hasSuffix("\r") }) { return }
    var expected = f
    if !f.body.isEmpty, f["content-length"] == nil { expected.headers.append(("content-length", String(f.body.count))) }
    var p = StompParser()
    let again = p.append(f.encoded.utf8)
    check(again == [.frame(expected)], "\(f) encoded as \(f.encoded.debugDescription) reads back as \(again)")
}
