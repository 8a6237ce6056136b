import Dispatch
import Foundation
import Synchronization

/// Runs `body` in a task that SIGINT or SIGTERM cancels, so bots leave the room and finish
/// their files instead of dying mid-write. A second signal exits at once.
///
/// The first signal is honoured in every phase: a step that does not react to cancellation
/// (a server that accepts the connection and never answers) cannot keep the process, which
/// exits `grace` after the signal if `body` has not ended by then. Once `body` has ended the
/// default disposition is back, so a signal while the results are written stops the process.
/// If `body` fails after a signal, that is reported as the stop it was (exit 128 + signal).
func runCancellableOnSignals<T: Sendable>(
    grace: Duration = .seconds(10), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let task = Task { try await body() }
    let stop = StopState()
    var sources: [any DispatchSourceSignal] = []
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler {
            // A second signal means "now": stop without waiting for a clean finish.
            guard stop.firstSignal(sig) else {
                FileHandle.standardError.write(Data("sfubot: stopping now (second signal)\n".utf8))
                exit(128 + sig)
            }
            task.cancel()
            let seconds = grace.components.seconds
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(seconds))) {
                guard !stop.bodyEnded else { return }
                FileHandle.standardError.write(Data("sfubot: still busy \(seconds) s after \(signalName(sig)) (a step that does not react to it); stopping now\n".utf8))
                exit(128 + sig)
            }
        }
        source.resume()
        sources.append(source)
    }
    defer {
        stop.endBody()
        sources.forEach { $0.cancel() }
        for sig in [SIGINT, SIGTERM] { signal(sig, SIG_DFL) }
    }
    do {
        return try await task.value
    } catch {
        if let sig = stop.received { throw CLIFailure.stopped(by: sig) }
        throw error
    }
}

func signalName(_ sig: Int32) -> String { sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal \(sig)" }

/// Which signal came first, and whether the body has ended (read by the grace timer).
private final class StopState: Sendable {
    private struct Value { var received: Int32?; var bodyEnded = false }
    private let value = Mutex(Value())

    /// Records `sig`; false if a signal came before.
    func firstSignal(_ sig: Int32) -> Bool {
        value.withLock { v in
            guard v.received == nil else { return false }
            v.received = sig
            return true
        }
    }

    var received: Int32? { value.withLock { $0.received } }
    var bodyEnded: Bool { value.withLock { $0.bodyEnded } }
    func endBody() { value.withLock { $0.bodyEnded = true } }
}
