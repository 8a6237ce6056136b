import Foundation
import Logging
import ObjectStore
import Proof

/// `--database` with instances that are not alike (ClusterStore+Refusal): a job this instance
/// claimed but cannot start is released for the others, and failed, with a `job.failed`
/// webhook, only once every live instance has refused it. At start, how the others differ.
extension JobManager {
    func cannotRun(_ row: ClusterStore.Row, because reason: String, _ store: ClusterStore) async {
        let outcome: ClusterStore.Refusal
        do { outcome = try await store.refuse(row.id, reason: reason, grace: clusterOptions.takeoverGrace) } catch {
            log.error("job \(row.id) cannot start here (\(reason)), and that cannot be written (\(error)): another instance takes it when the lease runs out")
            return
        }
        switch outcome {
        case .released:
            log.warning("job \(row.id) cannot start on \(store.instance): \(reason); released for another instance")
            try? await store.notify("released")
        case .failed(let error):
            log.error("job \(row.id) failed: \(error)")
            config.publishing?.ended(job: row.id, kind: row.spec.kind.rawValue, room: row.spec.room, failed: error, folder: nil)
        case .notHeld:
            log.warning("job \(row.id) cannot start on \(store.instance) (\(reason)), and is no longer this instance's")
        }
    }

    /// This instance's roots, signing key, store and Janus allow-list in the database; each other
    /// instance that differs is named in a warning. A difference is allowed (paths are resolved
    /// below each instance's own roots; a job an instance cannot run goes to another), but it is
    /// the operator's to know: a file only one disk holds runs only there, a failed-over
    /// recording is signed by two keys, its parts uploaded to two stores.
    func registerInstance(_ store: ClusterStore) async {
        let mine = ClusterStore.Settings(outputRoot: config.roots.output.path, mediaRoot: config.roots.media.path,
                                         signer: config.signingKey?.publicKey.fingerprint,
                                         storage: config.publishing?.location?.description, janusAllow: config.janusAllowed.urls.sorted())
        do {
            try await store.forgetRefusals()
            for difference in try await store.register(mine) {
                log.warning("cluster: \(difference). Job paths are relative to each instance's roots; a job an instance cannot run (a file its disk lacks, a Janus it does not allow) goes to another; a recording taken over is signed by, and uploaded to, the new owner's")
            }
        } catch {
            log.warning("cluster: cannot record this instance's roots and signer (\(error)); others are not compared")
        }
    }
}
