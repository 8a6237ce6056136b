#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Proof
import Testing

/// `RecordingFiles`, the one listing of a recording's folder the proof and the uploads take
/// (issue 41 item 4): read through the folder's descriptor, the recorder's own files left out.
@Suite struct RecordingFilesTests {
    /// A file of `text` in `dir`.
    static func write(_ text: String, _ name: String, in dir: URL) throws {
        try Data(text.utf8).write(to: dir.appendingPathComponent(name))
    }

    @Test("a folder renamed away and another put at its path after it was opened: the listing and the hashes are the opened folder's")
    func swappedFolder() throws {
        let dir = try ChainTests.folder()
        let parent = dir.deletingLastPathComponent()
        let moved = parent.appendingPathComponent(dir.lastPathComponent + "-moved")
        defer { for d in [dir, moved] { try? FileManager.default.removeItem(at: d) } }
        try Self.write("first recording's track", "1-ann.mkv", in: dir)
        try Self.write("its audio", "2-ben.opus", in: dir)
        let fd = try RecordingFiles.open(dir.path)
        defer { close(fd) }
        #expect(rename(dir.path, moved.path) == 0)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        try Self.write("a decoy of the same name", "1-ann.mkv", in: dir)
        try Self.write("a file the recording never had", "3-eve.mkv", in: dir)

        let files = try RecordingFiles.files(in: fd)
        #expect(files.map(\.name) == ["1-ann.mkv", "2-ben.opus"])
        let expected = try ["1-ann.mkv", "2-ben.opus"].map { try FileDigest.of(moved.appendingPathComponent($0)) }
        #expect(files.map(\.sha256) == expected.map(\.sha256), "hashed through the descriptor: the original files")
        #expect(files.map(\.size) == expected.map(\.size))
        #expect(try FileDigest.of(dir.appendingPathComponent("1-ann.mkv")).sha256 != files[0].sha256, "the decoy differs")
        // What the path shows now is the other folder's.
        let shown = try RecordingFiles.open(dir.path)
        defer { close(shown) }
        #expect(try RecordingFiles.names(in: shown) == ["1-ann.mkv", "3-eve.mkv"])
    }

    @Test("hidden files (marker, manifest reserve, a killed merge's .partial, a manifest's .tmp), subfolders and symbolic links are never listed; the proof's own files are listed, and left out on request")
    func skipped() throws {
        let dir = try ChainTests.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["1-ann.mkv", "manifest.json", ProofChain.fileName, ".sfubot-folder", ".manifest.reserve", ".1-ann.mkv.partial", ".manifest.json.tmp"] {
            try Self.write(name, name, in: dir)
        }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: false)
        try Self.write("inside a subfolder", "inner.mkv", in: dir.appendingPathComponent("sub"))
        #expect(symlink("/etc/passwd", dir.appendingPathComponent("link.mkv").path) == 0)
        #expect(mkfifo(dir.appendingPathComponent("fifo.mkv").path, 0o600) == 0)
        let fd = try RecordingFiles.open(dir.path)
        defer { close(fd) }
        #expect(try RecordingFiles.names(in: fd) == ["1-ann.mkv", "manifest.json", ProofChain.fileName])
        #expect(try RecordingFiles.files(in: fd, except: RecordingFiles.proofOwn).map(\.name) == ["1-ann.mkv"])
        #expect(throws: RecordingFiles.Failure.self, "a symbolic link is not read through") { try RecordingFiles.file("link.mkv", in: fd) }
    }

    @Test("a folder reached through a symbolic link is refused (O_NOFOLLOW), named in the error")
    func symlinkedFolder() throws {
        let dir = try ChainTests.folder()
        let link = dir.deletingLastPathComponent().appendingPathComponent(dir.lastPathComponent + "-link")
        defer { for d in [dir, link] { try? FileManager.default.removeItem(at: d) } }
        #expect(symlink(dir.path, link.path) == 0)
        let error = #expect(throws: RecordingFiles.Failure.self) { try RecordingFiles.open(link.path) }
        #expect(error?.description.contains(link.path) == true, "\(String(describing: error))")
    }
}
