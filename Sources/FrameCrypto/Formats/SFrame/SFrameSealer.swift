import Synchronization

/// Seals frames with one SFrame key: one sealer per sending stream and KID. It owns the CTR, so
/// no (KID, CTR) pair is ever used twice (RFC 9605 §4.3): every seal takes the next value, a
/// failed seal burns its value, and once every value is used sealing fails instead of wrapping.
public final class SFrameSealer: Sendable {
    public let key: SFrameKey
    /// The CTR the next seal takes.
    private let nextCounter: Atomic<UInt64>

    public init(key: SFrameKey) {
        self.key = key
        nextCounter = Atomic(0)
    }

    /// A sealer whose first frame carries `firstCounter` (tests: the header forms, the end of the CTR space).
    init(key: SFrameKey, firstCounter: UInt64) {
        self.key = key
        nextCounter = Atomic(firstCounter)
    }

    /// The most bytes `seal` writes for `frame`: the longest header for this KID, the frame, the tag.
    public func sealedCapacity(_ frame: UnsafeRawBufferPointer) -> Int {
        1 + SFrameHeader.extendedCount(key.kid) + 8 + frame.count + key.suite.tagCount
    }

    /// Writes header ‖ ciphertext ‖ tag for `frame` into `output` and returns the byte count.
    /// `metadata` is authenticated, not sent (RFC 9605 §4.4.3; empty for media as sfubot
    /// sends it). `output` must not overlap `frame`. On any error nothing usable was written:
    /// drop the frame, never send it in the clear.
    public func seal(_ frame: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer = .init(start: nil, count: 0),
                     into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int {
        // OpenSSL takes lengths as Int32; no media frame comes near this.
        guard frame.count <= SFrameOpener.maxFrameCount, metadata.count <= SFrameOpener.maxFrameCount else { throw .sealFailed }
        let ctr = try takeCounter()
        let header = SFrameHeader(kid: key.kid, ctr: ctr)
        let tagCount = key.suite.tagCount
        let total = header.count + frame.count + tagCount
        guard output.count >= total, let out = output.baseAddress else { throw .outputTooSmall }
        header.encode(into: out)
        let sealed = key.seal(ctr: ctr, header: UnsafeRawBufferPointer(start: out, count: header.count), metadata: metadata,
                              frame, ciphertext: out + header.count, tag: out + header.count + frame.count)
        guard sealed else {
            // Leave no ciphertext of a failed seal where a careless caller could send it.
            out.initializeMemory(as: UInt8.self, repeating: 0, count: total)
            throw .sealFailed
        }
        return total
    }

    /// The CTR for one frame. The last value (2^64 - 1) is never handed out, so the counter
    /// cannot wrap back to a used one: past it every seal fails and the sender needs a new KID.
    private func takeCounter() throws(FrameError) -> UInt64 {
        var current = nextCounter.load(ordering: .relaxed)
        while current != .max {
            let (exchanged, original) = nextCounter.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return current }
            current = original
        }
        throw .sealFailed
    }
}
