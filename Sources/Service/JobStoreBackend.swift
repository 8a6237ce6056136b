import Foundation

/// Where the service keeps its jobs, and how a request reaches the instance that runs one:
/// one instance's state folder (`LocalJobStore`) or a cluster's PostgreSQL (`ClusterStore`).
/// Both name a job's state as `JobLifecycle` does and let it decide claims, stops, pauses and
/// ends, so `JobManager` has one path for both (issue 41 item 3). Every call runs on the
/// manager's actor (`isolated`): a store reads and changes the jobs running there as the
/// manager itself would, with no `await` between a check and its use. Errors are the API's
/// (`RequestProblem`: 404, 409, 429, 503 with what to do).
protocol JobStoreBackend: Sendable {
    /// The instance named as the owner of the jobs it runs; nil alone (no owner is shown).
    var owner: String? { get }

    /// Jobs kept from before taken up again (`claim`, `takeOver`, `settleStop`), and the store's
    /// own loops started; answers the task running them (nil: none), cancelled at shutdown.
    func start(in manager: isolated JobManager) async -> Task<Void, Never>?
    /// At a graceful shutdown, once `stopped` (this instance's jobs) have stopped (`release`);
    /// every write asked so far is kept when it returns.
    func shutdown(stopped: [String], in manager: isolated JobManager) async

    /// Before a request is read: whether a new job can be admitted (429 when not).
    func checkRoom(in manager: isolated JobManager) throws(RequestProblem)
    /// Folders of active jobs this store knows beyond the manager's memory (the overlap check).
    func held(in manager: isolated JobManager) async throws(RequestProblem) -> [HeldPaths]
    /// A checked and prepared request admitted: run here at once, or queued for any instance.
    func admit(_ new: Admission, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus

    func status(of id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus
    /// A DELETE of a job running here, before its files are finished (`askStop`, kept where a
    /// restart reads it, or nothing where the owner's end is what counts).
    func stopping(_ job: Job, in manager: isolated JobManager)
    /// A DELETE of a job that does not run here (another's: `askStop` passed on; nobody's:
    /// `settleStop`; ended: unchanged): its final state.
    func stopElsewhere(_ id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus
    /// A pause or resume applied to a job running here, kept before it is answered.
    func pauseKept(_ job: Job, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem)
    /// Pause or resume of a job that does not run here: its state once its owner applied it.
    func setPausedElsewhere(_ id: String, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus
    /// Why a job that does not run here takes no key now (404 or 409 naming where to send it).
    func refuseKeys(_ id: String, kind: JobSpec.Kind, in manager: isolated JobManager) async -> RequestProblem
    /// A recording's folders of `owner` given up (`POST …/uploads/abandon`).
    func abandonUploads(_ id: String, body: Data, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus

    /// Keeps the state of a job running here (a change, or its end: `end`).
    func persist(_ job: Job, in manager: isolated JobManager)
    /// A page of jobs of `kind`, oldest first, and the id to pass as `after` for the next.
    func page(_ kind: JobSpec.Kind, limit: Int, after: String?, in manager: isolated JobManager) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?)
    /// Forgets jobs that ended before `cutoff`; `here` are those the manager forgets from memory.
    func prune(before cutoff: Date, here: [String]) async
}

/// A job's folders as the overlap check compares them: its id, its room (nil: not yet known),
/// the canonical paths it writes.
typealias HeldPaths = (String, Int64?, [String])

/// A request checked and prepared for `admit`.
struct Admission {
    var id: String
    /// As asked (its paths as given, below this instance's roots).
    var spec: JobSpec
    var paths: JobPaths
    var prepared: JobPreparation
}
