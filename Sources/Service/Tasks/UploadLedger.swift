import ObjectStore
import Webhooks

/// Where an `upload` task's try writes what it learnt (JobPublishing+UploadTask): the queue
/// that holds the task, the cluster's `tasks` table (ClusterStore) or one instance's state
/// folder (LocalTaskQueue+Uploads). Both keep the verified object in the task before its local
/// file is deleted, and decide the recording's next step when its task ends, so that the try
/// is one code path for both.
protocol UploadLedger: Sendable {
    /// `object` verified in the store, kept in `task` (still this instance's claim) before its
    /// local file is deleted: a try after a crash finds it and only deletes. False: no longer
    /// this instance's.
    func noteUploaded(_ task: QueuedTask, _ object: UploadedObject) async throws -> Bool
    /// `task` ended: uploaded (`completed`) or given up (`discarded`, its file gone, `why`),
    /// and with it the recording's next step (`mergedKey`: a cluster's merged manifest). False:
    /// no longer this instance's, nothing written.
    func endUpload(_ task: QueuedTask, uploaded: Bool, why: String?, mergedKey: String) async throws -> Bool
    /// Queues a webhook of `job` (nothing without `--webhook-url`); false: its id is queued.
    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?) async throws -> Bool
}

extension ClusterStore: UploadLedger {
    /// `settleUpload`: the task and the recording's next step in one transaction.
    func endUpload(_ task: QueuedTask, uploaded: Bool, why: String?, mergedKey: String) async throws -> Bool {
        try await settleUpload(task, uploaded: uploaded, why: why, mergedKey: mergedKey) != nil
    }
}
