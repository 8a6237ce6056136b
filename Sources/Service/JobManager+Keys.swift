import Bot
import FrameCrypto
import Foundation
import Locking
import Logging

/// `POST /v1/{recordings|playbacks}/{id}/keys`: a key handed to a running job, as a host app
/// hands PQSRTC's `frameKey(participantId:index:key:)` one, in a `--key-feed` line's form.
/// The key goes into the job's key store in this process's memory and nowhere else: not the
/// state folder, not the database, not the log, not an answer. So only the instance running the
/// job takes it, and a job taken up again (a restart, a failover) has only the keys of its
/// request until the client hands the others in again.
extension JobManager {
    func handKey(_ id: String, kind: JobSpec.Kind, _ body: Data) async throws(RequestProblem) {
        let line: KeyFeedLine
        do { line = try KeyFeedLine.parse(String(decoding: body, as: UTF8.self)) } catch {
            throw RequestProblem(status: 400, message: error.description)
        }
        let keys = try await runningKeys(id, kind: kind)
        // Derived off the pool: a FrameCryptor key is PBKDF2 of 100 000 rounds.
        let applied: Result<Bool, KeyError> = await OffPool.run {
            do throws(KeyError) {
                switch line {
                case .set(let participant, let index, let material):
                    try keys.set(participant: participant, index: index, material: material)
                    return .success(true)
                case .ratchet(let participant, let index):
                    return .success(try keys.ratchet(participant: participant, index: index))
                }
            } catch { return .failure(error) }
        }
        let (participant, index, verb) = switch line {
        case .set(let p, let i, _): (p, i, "set")
        case .ratchet(let p, let i): (p, i, "ratcheted")
        }
        let whose = participant.map { "participant \($0)" } ?? "every participant"
        switch applied {
        case .failure(let error): throw .field("key", "refused: \(error)")
        case .success(false):
            throw RequestProblem(status: 409, message: "job \(id) holds no key of \(whose) at index \(index) to ratchet\(keys.formatName == .sframe ? " (SFrame has no ratchet)" : ""): hand the key in first")
        case .success(true):
            log.info("job \(id): key \(index) of \(whose) \(verb) (POST …/keys)")
        }
    }

    /// The key store of job `id` if it runs here; else why not (404, 409, 503).
    private func runningKeys(_ id: String, kind: JobSpec.Kind) async throws(RequestProblem) -> any IndexedKeying {
        if let job = jobs[id], job.spec.kind == kind, job.isActive, !job.stopRequested, !fenced.contains(id) {
            guard let keys = job.keys else { throw Self.notIndexed(id, job.spec) }
            return keys
        }
        // Ended here (its end is known here before the database has it): not another's to take.
        if let job = jobs[id], job.spec.kind == kind, !fenced.contains(id) { throw Self.ended(id) }
        throw await store.refuseKeys(id, kind: kind, in: self)
    }

    static func ended(_ id: String) -> RequestProblem {
        RequestProblem(status: 409, message: "job \(id) has ended: it takes no keys")
    }

    static func notIndexed(_ id: String, _ spec: JobSpec) -> RequestProblem {
        RequestProblem(status: 409, message: "job \(id) is in \(spec.frameFormat.rawValue) frames\(spec.key == .none ? " without encryption" : ""): its key is given when it starts; keys by index are handed in to format.frame framecryptor or sframe jobs")
    }
}
