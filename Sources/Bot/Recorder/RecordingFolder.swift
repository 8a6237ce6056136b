public import Foundation
public import Proof

/// A folder the recorder writes in, spelled two ways: `shown`, the path people see (logs, the
/// manifest, errors, the proof), and `access`, the path the file-system calls and GStreamer's
/// `location` properties use.
///
/// For `sfubot record` both are the folder's path. A serve job's folder was checked below
/// `--output-root` one component at a time without following symlinks, and that descriptor is
/// held for the job's life: `access` is `/proc/self/fd/N`, which reaches that very folder even if
/// a component of its name is later swapped for a symlink.
public struct RecordingFolder: Sendable {
    public let shown: URL
    public let access: URL
    /// The descriptor `access` names, closed with the last copy of this folder.
    private let held: HeldDescriptor?

    /// A folder reached by its name (`record`, the agent).
    public init(_ path: URL) {
        shown = path
        access = path
        held = nil
    }

    /// A folder reached through `descriptor` (opened `O_DIRECTORY`), which this takes over;
    /// `shown` is the path it was checked at.
    public init(holding descriptor: Int32, shown: URL) {
        self.shown = shown
        held = HeldDescriptor(descriptor)
        access = URL(fileURLWithPath: "/proc/self/fd/\(descriptor)", isDirectory: true)
    }

    /// Whether the folder is held open (it exists and was checked: the recorder need not make it).
    public var isHeld: Bool { held != nil }

    /// The file `name` in this folder.
    public func file(_ name: String) -> RecordingFile { RecordingFile(name: name, in: self) }

    /// The access path of `path`, spelled as shown, if it is this folder or inside it.
    public func access(ofShown path: String) -> URL? {
        let folder = shown.path
        if path == folder { return access }
        guard path.hasPrefix(folder + "/") else { return nil }
        return access.appendingPathComponent(String(path.dropFirst(folder.count + 1)))
    }

    /// `text` with the access path spelled as shown wherever it appears: GStreamer's and the
    /// system's errors name the path they were given.
    public func showing(_ text: String) -> String {
        guard held != nil else { return text }
        let from = access.path, to = shown.path
        var out = "", rest = Substring(text)
        while let r = rest.range(of: from) {
            out += rest[..<r.lowerBound]
            // `/proc/self/fd/1` must not match the start of `/proc/self/fd/12`.
            out += rest[r.upperBound...].first?.isNumber == true ? from : to
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}

extension RecordingFolder {
    /// The recording's files in this folder (`RecordingFiles`: the proof's list and the
    /// uploads'), hashed. Blocking: off the cooperative pool.
    public func files(except skipped: Set<String> = []) throws(RecordingFiles.Failure) -> [RecordingFiles.File] {
        try through { fd throws(RecordingFiles.Failure) in try RecordingFiles.files(in: fd, except: skipped) }
    }

    /// Their names only (a checkpoint hashes what each file grew by itself).
    public func fileNames() throws(RecordingFiles.Failure) -> [String] {
        try through { fd throws(RecordingFiles.Failure) in try RecordingFiles.names(in: fd) }
    }

    /// `body` with the held descriptor; a folder reached by its name (`record`, serve after a
    /// restart) is opened once for it, so what is listed and what is read is one folder even
    /// if its path is swapped meanwhile.
    private func through<T>(_ body: (Int32) throws(RecordingFiles.Failure) -> T) throws(RecordingFiles.Failure) -> T {
        if let held { return try body(held.fd) }
        let fd = try RecordingFiles.open(access.path)
        defer { close(fd) }
        return try body(fd)
    }
}

/// A file the recorder writes (the call's mix), in the folder that holds it.
public struct RecordingFile: Sendable {
    public let folder: RecordingFolder
    public let name: String

    /// A file reached by its path (`record --mix`).
    public init(_ path: URL) {
        self.init(name: path.lastPathComponent, in: RecordingFolder(path.deletingLastPathComponent()))
    }

    public init(name: String, in folder: RecordingFolder) {
        self.folder = folder
        self.name = name
    }

    public var shown: URL { folder.shown.appendingPathComponent(name) }
    public var access: URL { folder.access.appendingPathComponent(name) }

    /// `name-2.ext` for 2, … in the same folder; itself for 1.
    func numbered(_ n: Int) -> RecordingFile {
        guard n > 1 else { return self }
        let ext = (name as NSString).pathExtension
        return folder.file((name as NSString).deletingPathExtension + "-\(n)" + (ext.isEmpty ? "" : "." + ext))
    }
}

/// A descriptor owned for as long as a recording may write through it.
final class HeldDescriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}
