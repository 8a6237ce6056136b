import Bot
import FrameCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a job needs from the file system before it starts, done off the cooperative pool
/// (`OffPool.run`): its key read, its media checked, its output folder and mix made.
/// Reads come first, so a refused request has created nothing.
struct JobPreparation: Sendable {
    let protection: FrameProtection
    /// The mix file this preparation created (empty), removed again if the job does not start.
    let createdMix: RecordingFile?
    /// A playback's file, held open from the check on: GStreamer reads it through this
    /// descriptor, so a path swapped for a symlink after the check cannot redirect it.
    let media: HeldFile?
    /// A recording's folder and its mix's folder, held open from the check on, as `media` is.
    let outputs: HeldOutputs?

    /// `fresh`: a new job (its folder new or empty, its mix a new file); else a job taken up
    /// again after a restart, whose folder holds its earlier files.
    init(_ spec: JobSpec, paths: JobPaths, roots: Roots, fresh: Bool) throws(RequestProblem) {
        protection = try Self.protection(spec, paths: paths, roots: roots)
        // A bridge's other key is checked now: a bad one is the request's error, not the job's.
        if let toRoom = spec.toRoom { _ = try Self.sendingProtection(toRoom, display: spec.display ?? "0:sfubot") }
        media = try paths.file.map { file throws(RequestProblem) in HeldFile(try RootFiles.openRegular(file, in: roots.media, field: "file")) }
        if let out = paths.out {
            let root = roots.output
            let made = try RootFiles.prepareOutputs(out: out, mix: paths.mix, in: root, fresh: fresh)
            let folder = RecordingFolder(holding: made.folder, shown: URL(fileURLWithPath: root.canonical(out)))
            let mix = paths.mix.flatMap { mix in
                made.mixFolder.map { fd in
                    RecordingFolder(holding: fd, shown: URL(fileURLWithPath: root.canonical(Array(mix.dropLast())))).file(mix.last ?? "")
                }
            }
            outputs = HeldOutputs(folder: folder, mix: mix)
            createdMix = made.createdMix ? mix : nil
        } else {
            outputs = nil
            createdMix = nil
        }
    }

    /// The job's keys: ECall's call key, or the store of a format whose frames name their key,
    /// every key derived here (off the pool: PBKDF2 takes tens of milliseconds a key).
    private static func protection(_ spec: JobSpec, paths: JobPaths, roots: Roots) throws(RequestProblem) -> FrameProtection {
        let indexed = spec.frameFormat.namesItsKey
        var shared: KeyMaterial?
        switch spec.key {
        case .none:
            guard indexed else { return .none }
        case .hex(let hex) where indexed:
            do { shared = try KeyMaterial(hex: hex) } catch { throw .field("key.hex", "not key material: \(error)") }
        case .hex(let hex):
            do { return .e2ee(KeyRing(current: try CallKey(hex: hex))) } catch { throw .field("key.hex", "not a call key: \(error)") }
        case .file:
            let fd = try RootFiles.openRegular(paths.keyFile ?? [], in: roots.media, field: "key.file")
            defer { close(fd) }
            let shown = roots.media.canonical(paths.keyFile ?? [])
            guard indexed else { return .e2ee(KeyRing(current: try KeyFile.read(fd: fd, shown: shown))) }
            shared = try KeyFile.material(fd: fd, shown: shown)
        }
        let choice: FrameFormatChoice
        do { choice = try (spec.format ?? FrameFormatSettings()).checked(naming: { "format.\($0.rawValue)" }) } catch {
            throw RequestProblem(status: 400, message: error.message)
        }
        var own: [String: [UInt64: KeyMaterial]] = [:]
        for (i, k) in (spec.keys ?? []).enumerated() {
            do { own[k.participant, default: [:]][k.index] = try KeyMaterial(hex: k.key) } catch { throw .field("keys[\(i)].key", "not key material: \(error)") }
        }
        // A playback (or a live source in) seals as the participant its display names (PQSRTC:
        // the track's owner).
        let display = spec.display ?? "0:sfubot"
        let publishes = spec.kind == .playback || spec.from != nil
        let sender = publishes ? choice.participantIDs.id(display: display, feedID: nil) : ""
        do { return try choice.protection(shared: shared, own: own, sender: sender) } catch {
            throw .field(spec.keys == nil ? "key" : "keys", "\(spec.frameFormat.rawValue) key refused: \(error)")
        }
    }

    /// Undoes what this preparation created, for a job that did not start after all (through
    /// the held folder: never by a name that may lead elsewhere now).
    func discard() {
        if let createdMix { unlink(createdMix.access.path) }
    }
}

/// Where a serve job's recording is written: folders opened by the check, written through.
struct HeldOutputs: Sendable {
    let folder: RecordingFolder
    let mix: RecordingFile?
}

/// A descriptor owned for as long as a job may read it, closed with the last reference.
final class HeldFile: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    /// A path that opens this very file again (the kernel's link to the open descriptor),
    /// whatever now sits at the name it was opened by.
    var path: String { "/proc/self/fd/\(fd)" }
}

extension JobPreparation {
    /// What a bridge seals with in the other room (`toRoom`), as the participant `display`
    /// names (FrameCryptor and SFrame: that sender's key). Derives keys: call it off the pool.
    static func sendingProtection(_ to: JobSpec.ToRoom, display: String) throws(RequestProblem) -> FrameProtection {
        let format = to.format ?? FrameFormatSettings()
        let shared: KeyMaterial
        switch to.key {
        case .none: return .none
        case .file: throw .field("toRoom.key", "give the other room's key as {\"hex\": \"…\"}")
        case .hex(let hex) where !format.frame.namesItsKey:
            do { return .e2ee(KeyRing(current: try CallKey(hex: hex))) } catch { throw .field("toRoom.key.hex", "not a call key: \(error)") }
        case .hex(let hex):
            do { shared = try KeyMaterial(hex: hex) } catch { throw .field("toRoom.key.hex", "not key material: \(error)") }
        }
        let choice: FrameFormatChoice
        do { choice = try format.checked(naming: { "toRoom.format.\($0.rawValue)" }) } catch { throw RequestProblem(status: 400, message: error.message) }
        do { return try choice.protection(shared: shared, own: [:], sender: choice.participantIDs.id(display: display, feedID: nil)) } catch {
            throw .field("toRoom.key", "\(format.frame.rawValue) key refused: \(error)")
        }
    }
}
