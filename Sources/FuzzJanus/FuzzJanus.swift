import Foundation
import FuzzSupport
import Janus

// libFuzzer target (`make fuzz`): a text message from Janus through what `JanusSession.dispatch`
// does with it: the JSON decoder of `JanusMessage`, the handle event it carries, a plugin's
// error, and the VideoRoom event a participant reads from it. No main: libFuzzer's drives this.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJanus(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // The WebSocket hands the session text: invalid UTF-8 arrives repaired, as here.
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let message = try? JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8)) else { return 0 }
    _ = message.pluginError
    if let d = message.plugindata?.data ?? message.data { checkReencoding(d) }
    switch JanusSession.event(in: message) {
    case .trickle(let mline, let candidate):
        // Handed to webrtcbin as a C `guint`: it must be in range (issue 16).
        check((0...1024).contains(mline), "m-line index \(mline) reached a handle")
        _ = candidate
    case .plugin(let data, let jsep):
        switch VideoRoomEvent(data: data, jsep: jsep) {
        case .publishers(let list):
            for p in list { _ = (p.userID, p.displayName, p.streams.count) }
        case .updated(let streams, _):
            for s in streams { _ = (s.mid, s.feedID, s.type) }
        case .unpublished, .leaving, .destroyed, .other: break
        }
    case .media, .hangup, .webrtcUp, .slowLink, .detached, .reclaimed, nil: break
    }
    return 0
}

/// Free-form JSON the bot may send back (plugin data, candidates) settles after one
/// encode/decode: whole doubles become ints, then nothing changes.
func checkReencoding(_ json: JSON) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    func cycle(_ j: JSON) -> JSON {
        guard let text = try? encoder.encode(j) else { fatalError("cannot encode \(j)") }
        guard let back = try? JSONDecoder().decode(JSON.self, from: text) else {
            fatalError("cannot decode our own \(String(decoding: text, as: UTF8.self))")
        }
        return back
    }
    let once = cycle(json)
    check(cycle(once) == once, "JSON does not settle: \(once)")
}
