import Dispatch
import Foundation
import Bot
import Synchronization
import Locking

/// Runs `body` in a task that SIGINT or SIGTERM cancels, so bots leave the room and finish
/// their files instead of dying mid-write.
///
/// The first signal is honoured in every phase: a step that does not react to cancellation
/// (a server that accepts the connection and never answers) cannot keep the process, which
/// exits `grace` after the signal if `body` has not ended by then; but while files are being
/// finished (`Finishing`: end-of-stream, remux, read-back) the deadline waits, since finishing
/// them is the stop. A second signal says so and changes nothing; a third exits at once, and the
/// files then keep what reached the disk (they are written so that a killed process leaves them
/// playable). The handlers stay until the process exits: a second Ctrl-C that lands after `body`
/// ended, while the result is printed, used to meet the default disposition and turn a clean stop
/// into "killed by SIGINT". If `body` fails after a signal, that is reported as the stop it was
/// (exit 128 + signal).
func runCancellableOnSignals<T: Sendable>(
    grace: Duration = .seconds(10), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let task = Task { try await body() }
    let stop = StopState()
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler {
            switch stop.signal(sig) {
            case 1:
                task.cancel()
                deadline(after: grace, sig: sig, stop: stop)
            case 2:
                FileHandle.standardError.write(Data("sfubot: already stopping: finishing the files (a third signal stops at once and leaves them as they are)\n".utf8))
            default:
                FileHandle.standardError.write(Data("sfubot: stopping now (third signal)\n".utf8))
                exit(128 + sig)
            }
        }
        source.resume()
        signalSources.append(source)
    }
    defer { stop.endBody() }
    do {
        return try await task.value
    } catch {
        if let sig = stop.received { throw CLIFailure.stopped(by: sig) }
        throw error
    }
}

/// Kept for the life of the process (see above). Only the one call per process appends, before
/// its body starts, hence unsafe.
nonisolated(unsafe) private var signalSources: [any DispatchSourceSignal] = []

/// Exits `grace` after the first signal if the body still runs, unless files are being finished
/// then: it looks again every second while they are.
private func deadline(after grace: Duration, sig: Int32, stop: StopState) {
    let seconds = grace.components.seconds
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(seconds))) {
        guard !stop.bodyEnded else { return }
        guard !Finishing.inProgress else {
            if stop.noteFinishing() { FileHandle.standardError.write(Data("sfubot: still finishing the files \(seconds) s after \(signalName(sig)); waiting for them\n".utf8)) }
            deadline(after: .seconds(1), sig: sig, stop: stop)
            return
        }
        FileHandle.standardError.write(Data("sfubot: still busy \(seconds) s after \(signalName(sig)) (a step that does not react to it); stopping now\n".utf8))
        exit(128 + sig)
    }
}

func signalName(_ sig: Int32) -> String { sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal \(sig)" }

/// Which signal came first, and whether the body has ended (read by the grace timer).
private final class StopState: Sendable {
    private struct Value { var received: Int32?; var count = 0; var bodyEnded = false; var saidFinishing = false }
    private let value = Locked(Value())

    /// Records `sig`; returns how many signals came so far, this one included.
    func signal(_ sig: Int32) -> Int {
        value.withLock { v in
            v.received = v.received ?? sig
            v.count += 1
            return v.count
        }
    }

    /// True the first time: the wait for finishing files is said once.
    func noteFinishing() -> Bool { value.withLock { v in defer { v.saidFinishing = true }; return !v.saidFinishing } }

    var received: Int32? { value.withLock { $0.received } }
    var bodyEnded: Bool { value.withLock { $0.bodyEnded } }
    func endBody() { value.withLock { $0.bodyEnded = true } }
}
