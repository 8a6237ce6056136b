import ArgumentParser
import Bot
import Foundation
import Janus

/// A one-line error with an exit code that says which kind of failure it was (sysexits.h).
struct CLIFailure: Error, CustomStringConvertible {
    enum Code: Int32 {
        case badKey = 65        // EX_DATAERR
        case noInput = 66       // EX_NOINPUT
        case roomMissing = 68   // EX_NOHOST
        case unreachable = 69   // EX_UNAVAILABLE
        case media = 70         // EX_SOFTWARE
        case cannotWrite = 73   // EX_CANTCREAT
        case incomplete = 74    // EX_IOERR: a recording lost something (manifest.json's errors)
        case unfinished = 75    // EX_TEMPFAIL: `verify`: as signed so far, but not every byte is proven (a killed recorder)
        case protocolError = 76 // EX_PROTOCOL
        case config = 78        // EX_CONFIG
        case interrupted = 130  // 128 + SIGINT, as a shell reports a process the signal ended
        case terminated = 143   // 128 + SIGTERM
    }
    let description: String
    let code: Code

    init(_ description: String, code: Code) {
        self.description = description
        self.code = code
    }

    init(_ error: BotError) {
        description = error.description
        switch error.category {
        case .janus: code = error.janusError.map(Self.code(for:)) ?? .protocolError
        case .roomMissing: code = .roomMissing
        case .inputMissing: code = .noInput
        case .output: code = error.isLoss ? .incomplete : .cannotWrite
        case .media: code = .media
        }
    }

    /// A run that a signal stopped before it got to the end (e.g. while connecting).
    static func stopped(by sig: Int32) -> Self {
        Self("stopped by \(signalName(sig)) before it finished", code: sig == SIGINT ? .interrupted : .terminated)
    }

    /// 69 when Janus cannot be reached or went away, 68 for VideoRoom's "no such room", else 76.
    static func code(for error: JanusError) -> Code {
        if error.isConnectionProblem { return .unreachable }
        return error.pluginCode == 426 ? .roomMissing : .protocolError
    }

    /// Prints the line and exits with the code.
    func exit() -> Never {
        FileHandle.standardError.write(Data("sfubot: \(description)\n".utf8))
        Foundation.exit(code.rawValue)
    }
}
