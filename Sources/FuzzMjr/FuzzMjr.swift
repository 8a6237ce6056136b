import FrameCrypto
import Foundation
import FuzzSupport
import Mjr

// libFuzzer target (`make fuzz`): a `.mjr` file's bytes through what `mjr decrypt` does before
// any pipeline: the header and packet reader, RTP parsing and reordering, H.264 depacketizing,
// and opening every frame with the key the seeds were sealed with. No main: libFuzzer's drives this.

/// The unit tests' key (bytes 0…31): the seeds' frames open, so mutations reach the depacketizer
/// and the frame openers past the GCM check.
let keys = MjrFixedKey(try! CallKey(bytes: Array(0..<32) as [UInt8]))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMjr(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Data(UnsafeBufferPointer(start: data, count: size))
    guard let file = try? MjrFile(data: bytes, path: "fuzz.mjr") else { return 0 }
    for p in file.packets {
        check(p.range.lowerBound >= 10 && p.range.upperBound <= size && p.range.count >= 12, "packet \(p.range) in a \(size)-byte file")
    }
    let track = MjrTrack(file: file, keys: keys, sender: nil)
    let stats = track.stats.snapshot
    check(stats.received == stats.opened + stats.droppedTotal, "\(stats.received) frames: \(stats.opened) opened, \(stats.dropped) dropped")
    check(track.frames.count + track.beforeFirstKeyframe == stats.opened, "\(track.frames.count) frames kept, \(stats.opened) opened")
    var end = 0
    for f in track.frames {
        // Frames lie one after the other in `bytes`.
        check(f.range.lowerBound == end && f.range.upperBound >= f.range.lowerBound, "frame \(f.range) after byte \(end)")
        end = f.range.upperBound
    }
    check(end == track.bytes.count, "frames end at \(end) of \(track.bytes.count) bytes")
    return 0
}
