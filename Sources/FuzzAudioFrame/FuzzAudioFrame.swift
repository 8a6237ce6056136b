import FrameCrypto
import FuzzSupport

// libFuzzer target (`make fuzz`): the audio frame opener on received bytes, then a seal/open
// round trip of the same bytes as plaintext. No main: libFuzzer's drives this function.

/// The fixed test key of the unit tests (bytes 0…31), so the seed corpus's sealed frames open
/// and mutations of them reach the GCM open with the right key.
let key = try! CallKey(bytes: Array(0..<32) as [UInt8])
let otherKey = try! CallKey(bytes: Array(repeating: 0xEE, count: 32) as [UInt8])

/// The key in each slot of the ring a frame is tried with: current, backup, future.
let rings: [KeyRing.Candidates] = {
    let frozen: @Sendable () -> Double = { 0 }
    let backup = KeyRing(current: key, clock: frozen)
    backup.setCurrent(otherKey)
    let future = KeyRing(current: otherKey, clock: frozen)
    future.schedule(key, at: 1_000)
    return [KeyRing(current: key).candidates, backup.candidates, future.candidates]
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAudioFrame(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    // The length picks the slot holding the right key (a sealed frame's first byte is always
    // the marker), so current, backup and future are all tried.
    let keys = rings[size % rings.count]

    // Received bytes into an output of exactly the opener's capacity: ASan catches a copy past
    // its end (OpenSSL's own writes are not instrumented).
    let capacity = max(0, size - AudioFrame.overhead)
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
    defer { output.deallocate() }
    do throws(DropReason) {
        let n = try AudioFrame.open(input, keys: keys, into: output)
        check(n == capacity, "opened \(n) bytes of a \(size)-byte frame")
    } catch {
        switch error {
        case .noMarker: check(input.first != AudioFrame.marker)
        case .tooShort: check(size < AudioFrame.overhead)
        case .noKey, .malformed: break
        // ECall's layout names no key index and has no clear trailer: these are other formats'.
        case .missingKey, .unencrypted, .replayed: check(false, "ECall's open said \(error)")
        }
    }

    // The same bytes as a plaintext: sealed, they open to themselves with every slot.
    let sealed = UnsafeMutableRawBufferPointer.allocate(byteCount: size + AudioFrame.overhead, alignment: 1)
    defer { sealed.deallocate() }
    let opened = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
    defer { opened.deallocate() }
    do {
        let s = try AudioFrame.seal(input, key: key, into: sealed)
        check(s == size + AudioFrame.overhead && sealed[0] == AudioFrame.marker)
        let o = try AudioFrame.open(UnsafeRawBufferPointer(sealed), keys: keys, into: opened)
        check(o == size && opened.elementsEqual(input), "a sealed frame did not open to its plaintext")
    } catch {
        fatalError("round trip of \(size) bytes failed: \(error)")
    }
    return 0
}
