import FrameCrypto
import FuzzSupport

// libFuzzer target (`make fuzz`): the video frame opener on a received access unit
// (length-prefixed NAL units, 4-byte lengths, as the pipeline delivers them), then a seal/open
// round trip of the same bytes. No main: libFuzzer's drives this function.

/// The fixed test key of the unit tests (bytes 0…31): the seed corpus's sealed access units
/// open with it, so mutations of them walk the NAL units and reach the GCM open of each slice.
let key = try! CallKey(bytes: Array(0..<32) as [UInt8])
let keys = KeyRing(current: key).candidates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVideoFrame(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)

    // Received bytes into an output exactly as large as the input (the opener's capacity):
    // ASan catches a copy past its end (OpenSSL's own writes are not instrumented).
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
    defer { output.deallocate() }
    let opened = try? VideoFrame.open(input, keys: keys, into: output)
    if let opened {
        check(opened <= size, "opened \(opened) bytes from \(size)")
        // What opened is a well-formed access unit with the same keyframe-ness.
        let au = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(output)[..<opened])
        check(VideoFrame.sealedCapacity(au) != nil, "an opened access unit does not parse")
        check(VideoFrame.containsIDR(au) == VideoFrame.containsIDR(input))
    }

    // The same bytes as a clear access unit: if they parse, they seal (unless a slice is too
    // short to keep its two clear bytes) and open to themselves.
    guard let capacity = VideoFrame.sealedCapacity(input) else { return 0 }
    check(capacity >= size)
    let sealed = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
    defer { sealed.deallocate() }
    let sealedCount: Int
    do { sealedCount = try VideoFrame.seal(input, key: key, into: sealed) } catch {
        check(error == .sealFailed && hasOneByteSlice(input), "sealing a parsed access unit failed: \(error)")
        return 0
    }
    check(sealedCount == capacity, "sealed \(sealedCount) bytes, capacity said \(capacity)")
    let frame = UnsafeRawBufferPointer(sealed)
    check(VideoFrame.containsIDR(frame) == VideoFrame.containsIDR(input), "sealing changed keyframe-ness")
    let back = UnsafeMutableRawBufferPointer.allocate(byteCount: sealedCount, alignment: 1)
    defer { back.deallocate() }
    do {
        let n = try VideoFrame.open(frame, keys: keys, into: back)
        check(n == size && UnsafeRawBufferPointer(back)[..<n].elementsEqual(input), "a sealed access unit did not open to itself")
    } catch {
        fatalError("a sealed access unit did not open: \(error)")
    }
    return 0
}

/// Whether a (parsed) access unit holds a slice of one byte, which sealing must refuse.
func hasOneByteSlice(_ au: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    while i + 4 <= au.count {
        let n = Int(au[i]) << 24 | Int(au[i + 1]) << 16 | Int(au[i + 2]) << 8 | Int(au[i + 3])
        if n == 1, au[i + 4] & 0x1F == 1 || au[i + 4] & 0x1F == 5 { return true }
        i += 4 + n
    }
    return false
}
