import Foundation
import PrivateIO
import Testing

/// Secret files are read only when private, regular and small, without blocking; written only new and 0600.
@Suite struct PrivateFileTests {
    let dir: URL = {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("privateio-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }()

    func file(_ name: String, _ text: String, mode: Int) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    @Test("a 0600 file is read whole; 0640 and 0604 are refused naming the mode and the fix")
    func mode() throws {
        let good = try file("good", "secret-token-1234", mode: 0o600)
        #expect(try PrivateFile.read(good, what: "the token file", maxBytes: 64).bytes == Array("secret-token-1234".utf8))
        for mode in [0o640, 0o604] {
            let loose = try file("loose\(mode)", "x", mode: mode)
            #expect(throws: PrivateFileError.self) { try PrivateFile.read(loose, what: "the token file", maxBytes: 64) }
            do { _ = try PrivateFile.read(loose, what: "the token file", maxBytes: 64) } catch {
                #expect(error.description.contains("open to other users (mode \(String(mode, radix: 8)))") && error.description.contains("chmod 600"), "\(error)")
                #expect(!error.unreadable)
            }
        }
    }

    @Test("a FIFO is refused at once, not waited on; a folder and /dev/zero are not regular files")
    func notRegular() throws {
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [fifo, dir.path, "/dev/zero"] {
            do { _ = try PrivateFile.read(path, what: "the key", maxBytes: 64); Issue.record("read \(path)") } catch {
                #expect(error.reason == .notRegular, "\(path): \(error)")
                #expect(error.unreadable)
            }
        }
    }

    @Test("larger than the bound is refused; a symlink is refused when not to be followed")
    func boundsAndSymlinks() throws {
        let big = try file("big", String(repeating: "a", count: 100), mode: 0o600)
        do { _ = try PrivateFile.read(big, what: "the key", maxBytes: 99); Issue.record("read past the bound") } catch {
            #expect(error.reason == .tooLarge(99))
        }
        #expect(try PrivateFile.read(big, what: "the key", maxBytes: 100).bytes.count == 100)
        let link = dir.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: big)
        #expect(try PrivateFile.read(link, what: "the key", maxBytes: 100).bytes.count == 100)
        #expect(throws: PrivateFileError.self) { try PrivateFile.read(link, what: "the key", maxBytes: 100, followSymlinks: false) }
    }

    @Test("createNew writes 0600 and never over an existing file, nor through a symlink")
    func createNew() throws {
        let path = dir.appendingPathComponent("new.key").path
        try PrivateFile.createNew(path, what: "the key", contents: Array("k1".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        do { try PrivateFile.createNew(path, what: "the key", contents: Array("k2".utf8)); Issue.record("overwrote") } catch {
            #expect(error.reason == .exists)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "k1")
        let target = try file("target", "keep", mode: 0o600)
        let link = dir.appendingPathComponent("dangling").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target + ".absent")
        #expect(throws: PrivateFileError.self) { try PrivateFile.createNew(link, what: "the key", contents: [1]) }
        #expect(!FileManager.default.fileExists(atPath: target + ".absent"))
    }

    @Test("openForAppend creates 0600 and refuses a file others can read")
    func append() throws {
        let path = dir.appendingPathComponent("keys.log").path
        let fd = try PrivateFile.openForAppend(path, what: "key log")
        close(fd)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        let loose = try file("loose.log", "", mode: 0o644)
        #expect(throws: PrivateFileError.self) { try PrivateFile.openForAppend(loose, what: "key log") }
        #expect(PrivateFile.openToOthers(loose) == "644")
        #expect(PrivateFile.openToOthers(path) == nil)
    }
}
