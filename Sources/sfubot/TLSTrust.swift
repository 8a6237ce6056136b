import ArgumentParser
import Bot
import CTLSTrust

/// `--tls-ca-file` for rtmps:// (`rtmp2sink`, `rtmp2src`): those elements make their own TLS
/// connection through GIO and verify the server against GIO's default database, which has no
/// property on the element; this process's default is set to the file's CAs, in place of the
/// system's (as `--turn-ca-file` replaces them for turns:).
enum TLSTrust {
    /// A usage error unless the file holds PEM certificates (a regular file under 1 MiB).
    static func check(_ caFile: String, option: String) throws {
        do { try ICEServers(caFile: caFile).checkCAFile(option: option) } catch { throw ValidationError("\(error)") }
    }

    /// Makes GIO's TLS connections of this process trust only the file's CAs.
    static func trustOnly(_ caFile: String, option: String) throws(CLIFailure) {
        if let message = sfb_tls_trust_only(caFile) {
            defer { sfb_tls_free_message(message) }
            throw CLIFailure("\(option) \(caFile): \(String(cString: message))", code: .config)
        }
    }
}
