import FrameCrypto
import FuzzSupport

// libFuzzer target (`make fuzz`): the NAL unit parsers against plain reference walks: Annex-B
// splitting, the start-code check sealed slices must pass, and the length-prefixed (avc) walk
// behind `sealedCapacity` and `containsIDR`. No main: libFuzzer's drives this function.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNALUnits(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)

    // Annex-B: units lie inside the stream in order, are never empty, never end in a zero
    // byte and never hold a start code; re-joined with start codes they split the same way.
    let units = NALUnits.annexB(input)
    var previousEnd = 0
    for u in units {
        check(u.lowerBound >= previousEnd + 3 && u.upperBound <= size && !u.isEmpty, "unit \(u) out of place")
        check(input[u.upperBound - 1] != 0, "unit \(u) ends in a zero byte")
        check(!hasStartCode(UnsafeRawBufferPointer(rebasing: input[u])), "unit \(u) holds a start code")
        previousEnd = u.upperBound
    }
    var rejoined: [UInt8] = []
    for u in units { rejoined += [0, 0, 1] + input[u] }
    let again = rejoined.withUnsafeBytes { r in NALUnits.annexB(r).map { Array(r[$0]) } }
    check(again == units.map { Array(input[$0]) }, "Annex-B split is not stable")

    // The start-code check against the definition.
    check(NALUnits.breaksAnnexB(input) == referenceBreaksAnnexB(input), "breaksAnnexB disagrees with the reference")

    // The avc walk: sealedCapacity and containsIDR against a reference walk.
    let walk = referenceWalk(input)
    check(VideoFrame.sealedCapacity(input) == walk.capacity, "sealedCapacity disagrees with the reference walk")
    check(VideoFrame.containsIDR(input) == walk.idrBeforeError, "containsIDR disagrees with the reference walk")
    return 0
}

func hasStartCode(_ b: UnsafeRawBufferPointer) -> Bool {
    b.count >= 3 && (0...(b.count - 3)).contains { b[$0] == 0 && b[$0 + 1] == 0 && b[$0 + 2] == 1 }
}

/// `00 00 00` or `00 00 01` anywhere, or a last byte of zero.
func referenceBreaksAnnexB(_ b: UnsafeRawBufferPointer) -> Bool {
    if b.last == 0 { return true }
    return b.count >= 3 && (0...(b.count - 3)).contains { b[$0] == 0 && b[$0 + 1] == 0 && b[$0 + 2] <= 1 }
}

/// 4-byte big-endian lengths that must tile the buffer, each unit non-empty. The capacity
/// adds 28 bytes per slice (types 1 and 5); nil if the lengths do not tile.
func referenceWalk(_ b: UnsafeRawBufferPointer) -> (capacity: Int?, idrBeforeError: Bool) {
    var i = 0, slices = 0, idr = false
    while i < b.count {
        guard b.count - i >= 4 else { return (nil, idr) }
        let n = (0..<4).reduce(0) { $0 << 8 | Int(b[i + $1]) }
        guard n > 0, n <= b.count - i - 4 else { return (nil, idr) }
        let type = b[i + 4] & 0x1F
        if type == 5 { idr = true }
        if type == 1 || type == 5 { slices += 1 }
        i += 4 + n
    }
    return (b.count + 28 * slices, idr)
}
