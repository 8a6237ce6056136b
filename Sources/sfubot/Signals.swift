import Dispatch
import Foundation

/// Runs `body` in a task that SIGINT or SIGTERM cancels, so bots leave the room and finish
/// their files instead of dying mid-write. A second signal exits at once.
func runCancellableOnSignals<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await body() }
    var sources: [any DispatchSourceSignal] = []
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler {
            // A second signal means "now": stop without waiting for a clean finish.
            if task.isCancelled {
                FileHandle.standardError.write(Data("sfubot: stopping now (second signal)\n".utf8))
                exit(128 + sig)
            }
            task.cancel()
        }
        source.resume()
        sources.append(source)
    }
    defer { sources.forEach { $0.cancel() } }
    return try await task.value
}
