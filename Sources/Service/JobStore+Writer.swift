import Dispatch
import Foundation
import Logging

/// Writes the state folder off Swift's cooperative pool: each save is an open, a write, an
/// fsync and a rename, and a slow or stuck disk must not hold the thread every request and
/// every job shares. One serial queue keeps a job's saves in the order they were asked, so the
/// newest state is the one left on disk; `flush()` waits for all of them (at shutdown).
final class JobStoreWriter: Sendable {
    let store: JobStore
    private let queue = DispatchQueue(label: "sfubot.serve.state")
    private let log: Logger

    init(store: JobStore, log: Logger) {
        self.store = store
        self.log = log
    }

    var folder: URL { store.folder }

    func save(_ record: JobStore.Record) {
        queue.async { [store, log] in
            do { try store.save(record) } catch {
                log.error("state: cannot save job \(record.id) in \(store.folder.path): \(error)")
            }
        }
    }

    func remove(_ id: String) {
        queue.async { [store] in store.remove(id) }
    }

    /// The records on disk, read on the writer's queue (after any save asked before).
    func load() async -> [JobStore.Record] {
        await withCheckedContinuation { continuation in
            queue.async { [store, log] in continuation.resume(returning: store.load(logger: log)) }
        }
    }

    /// Returns once every save and removal asked so far is on disk.
    func flush() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
