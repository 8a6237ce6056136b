import Dispatch
import Foundation

/// Runs `body` in a task that SIGINT or SIGTERM cancels, so bots leave the room and finish
/// their files instead of dying mid-write.
func runCancellableOnSignals<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await body() }
    var sources: [any DispatchSourceSignal] = []
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler { task.cancel() }
        source.resume()
        sources.append(source)
    }
    defer { sources.forEach { $0.cancel() } }
    return try await task.value
}
