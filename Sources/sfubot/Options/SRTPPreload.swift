import GStreamerKit
import Logging

/// The OpenSSL build of libsrtp2 for every command that runs webrtcbin (record, play, load,
/// serve, agent), loaded before GStreamer's srtp plugin (GStreamerKit's `SRTPLibrary`). Debian's
/// NSS build costs about 15 % of a recorder's CPU at `make bench-record`'s load
/// (docs/performance.md). Commands without SRTP (keys, verify, mjr, room) never load it.
enum SRTPPreload {
    static func run(_ logger: Logger, level: Logger.Level = .debug) {
        SRTPLibrary.preload()
        if let srtp = SRTPLibrary.loaded {
            logger.log(level: level, "SRTP: libsrtp2 built with OpenSSL (\(srtp))")
        } else {
            logger.log(level: level == .debug ? .debug : .notice,
                       "SRTP: the system's libsrtp2 (\(SRTPLibrary.fallbackReason ?? "")); per-packet CPU is higher")
        }
    }
}
