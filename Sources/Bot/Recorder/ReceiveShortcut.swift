import FastPath
import GStreamerKit
import Locking
import Logging
import Synchronization

/// How a recorder's PeerConnection receives media (`sfubot record --receive-path`).
public enum ReceivePath: String, Sendable, CaseIterable {
    /// webrtcbin as it is: a queue thread after nicesrc, and an rtpjitterbuffer with a
    /// thread of its own per received stream.
    case webrtcbin
    /// No thread per stream: each stream's jitter buffer is an `sfbreorder`
    /// (`WebRTCBin.withReorderBuffers`), and packets go from nicesrc to the SRTP decoder in
    /// nicesrc's thread (FastPath's `ReceiveInline`), so one thread per PeerConnection takes a
    /// packet from the socket to the file. A slow disk then holds up every feed's receiving
    /// (the kernel's receive buffer takes up the slack; its drops are counted).
    case direct
}

/// The direct path's shortcut past webrtcbin's receive queue, added once the PeerConnection's
/// transport exists (after Janus's first offer) and removed with the PeerConnection.
final class ReceiveShortcut: Sendable {
    private let shortcut = Locked<ReceiveInline?>(nil)
    private let path: ReceivePath

    init(_ path: ReceivePath) { self.path = path }

    /// Before the first remote description: the reorder buffers instead of rtpjitterbuffer.
    func prepare(_ webrtc: WebRTCBin) throws(GStreamerError) {
        if path == .direct { try webrtc.withReorderBuffers() }
    }

    /// After a remote description: the shortcut, once. Without it packets take the queue (a
    /// thread more, nothing lost), which is said once.
    func install(on webrtc: WebRTCBin, log: Logger) {
        guard path == .direct else { return }
        let failure = shortcut.withLock { s -> GStreamerError? in
            guard s == nil else { return nil }
            do throws(GStreamerError) { s = try ReceiveInline(webrtc) } catch { return error }
            return nil
        }
        if let failure { log.warning("receive path: \(failure); received packets take webrtcbin's queue") }
    }

    /// Packets given to the decoder directly, and packets that took the queue.
    var counts: (inline: UInt64, queued: UInt64)? { shortcut.withLock { $0?.counts } }
}
