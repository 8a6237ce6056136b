#if canImport(Glibc)
import Glibc
#endif
import CReceiveLimit
import FrameCrypto

/// The receiving thread's per-packet work past unprotect: audio frames open from their packet,
/// video frames are put together per SSRC up to the marker and then opened; opened bytes
/// collect in one buffer written to the file with write() when full.
struct Receiver {
    let keys: KeyRing.Candidates
    let fd: Int32
    static let bufferSize = 1 << 20, frameCapacity = 64 << 10
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
    var used = 0
    /// Video frames being put together: SSRC → index in `frames`.
    var index: [UInt32: Int] = [:]
    var frames: [(bytes: UnsafeMutableRawBufferPointer, count: Int)] = []

    init(keys: KeyRing.Candidates, fd: Int32) { (self.keys, self.fd) = (keys, fd) }

    mutating func take(_ p: SfbLimitPacket, slot: UnsafeMutableRawPointer, report: inout ReceiveLimit.Report) {
        report.packetsReceived += 1
        if p.length == -1 { report.unprotectFailures += 1; return }
        if p.length < 0 { report.malformed += 1; return }
        let payload = UnsafeRawBufferPointer(start: slot + Int(p.offset), count: Int(p.length))
        if p.payloadType == TrafficMix.audioPayloadType {
            report.audioPackets += 1
            open(payload, video: false, report: &report)
            return
        }
        report.videoPackets += 1
        let i: Int
        if let known = index[p.ssrc] { i = known } else {
            i = frames.count
            index[p.ssrc] = i
            frames.append((.allocate(byteCount: Self.frameCapacity, alignment: 16), 0))
        }
        if frames[i].count + payload.count <= Self.frameCapacity {
            UnsafeMutableRawBufferPointer(rebasing: frames[i].bytes[frames[i].count...]).copyMemory(from: payload)
        }
        frames[i].count += payload.count
        guard p.marker != 0 else { return }
        if frames[i].count <= Self.frameCapacity {
            open(UnsafeRawBufferPointer(rebasing: frames[i].bytes[..<frames[i].count]), video: true, report: &report)
        } else {
            report.framesFailed += 1
        }
        frames[i].count = 0
    }

    private mutating func open(_ frame: UnsafeRawBufferPointer, video: Bool, report: inout ReceiveLimit.Report) {
        if Self.bufferSize - used < frame.count { flush(report: &report) }
        let into = UnsafeMutableRawBufferPointer(rebasing: buffer[used...])
        do {
            let n = video ? try VideoFrame.open(frame, keys: keys, into: into) : try AudioFrame.open(frame, keys: keys, into: into)
            used += n
            report.framesOpened += 1
        } catch {
            report.framesFailed += 1
        }
    }

    mutating func flush(report: inout ReceiveLimit.Report) {
        var at = 0
        while at < used {
            let n = write(fd, buffer.baseAddress! + at, used - at)
            if n <= 0 { break }
            at += n
        }
        report.bytesWritten += at
        used = 0
    }

    func free() {
        buffer.deallocate()
        for f in frames { f.bytes.deallocate() }
    }
}
