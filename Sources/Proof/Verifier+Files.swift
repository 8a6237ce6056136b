import Foundation

extension Verifier {
    /// Entries walked in one folder before verify gives up (a folder of a recording holds tens).
    static let maxEntries = 100_000

    /// Every file below the folder (hidden ones and subfolders included, symbolic links not
    /// followed) is signed, or one the recorder and serve leave by design (`expected`, not
    /// read for anything shown). Any other fails, named, unless `allowExtra` (then listed).
    /// Folders given to verify themselves are theirs to check.
    func checkFiles(_ directory: URL, folder: Folder, prefix: String, nested: Set<String>, into r: inout VerifyReport) {
        var pending = [""], seen = 0
        while let relative = pending.popLast() {
            let dir = relative.isEmpty ? directory : directory.appendingPathComponent(relative)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { continue }
            for name in names.sorted() {
                seen += 1
                guard seen <= Self.maxEntries else {
                    r.problem("more than \(Self.maxEntries) entries: not a recording's folder", file: prefix.isEmpty ? directory.path : prefix)
                    return
                }
                let path = relative.isEmpty ? name : relative + "/" + name
                let url = directory.appendingPathComponent(path)
                var st = stat()
                guard lstat(url.path, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR {
                    if !nested.contains(url.standardizedFileURL.path) { pending.append(path) }
                    continue
                }
                if folder.signed.contains(path) { continue }
                if let why = expected(path, url: url, st: st, folder: folder) {
                    r.unsigned.append("\(prefix)\(path) (\(why))")
                } else if allowExtra {
                    r.extraFiles.append(prefix + path)
                } else {
                    r.problem("\(Self.kind(st.st_mode) == "not a file" ? "a file" : Self.kind(st.st_mode)) nothing signed: not part of the recording (`--allow-extra` for a folder that holds more by design)", file: prefix + path)
                }
            }
        }
    }

    /// Why a file nothing signed belongs in a recording's folder, or nil. Each is checked to be
    /// what it says, so it can hold nothing else.
    func expected(_ path: String, url: URL, st: stat, folder: Folder) -> String? {
        guard st.st_mode & S_IFMT == S_IFREG else { return nil }
        // Left by a recorder killed at the wrong moment: only where no signed manifest says it finished.
        let unfinished = !folder.signedManifest && folder.chain.lastValid?.final != true
        switch path {
        case "manifest.json" where folder.liveManifest && unfinished:
            return "the recorder's live manifest, written every second: the checkpoints prove the files"
        case ".manifest.json.tmp" where unfinished && st.st_size <= 8 << 20:
            return "a manifest the recorder was killed writing"
        case _ where unfinished && !path.contains("/") && path.hasPrefix(".") && path.hasSuffix(".partial"):
            return "a merge the recorder was killed in (its track files are kept, signed)"
        case "recording.json" where st.st_size <= 8 << 20:
            return "serve's merged manifest in a bucket"
        case ".sfubot-folder" where st.st_size <= 64:
            guard let text = try? String(contentsOf: url, encoding: .utf8),
                  text.trimmingCharacters(in: .newlines).allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
            return "serve's folder id"
        case ".manifest.reserve" where st.st_size <= 1 << 20:
            guard let data = FileManager.default.contents(atPath: url.path), data.allSatisfy({ $0 == 0 }) else { return nil }
            return "space the recorder keeps for manifest.json: zeros"
        default:
            return nil
        }
    }
}
