import ArgumentParser
import Foundation
import Proof

/// `sfubot verify`: an auditor's check of a recording folder (docs/proof.md).
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a recording's signatures, checkpoint chain and every file's hash and size.",
        discussion: """
            Reads DIR/manifest.json (its signed `proof`) and DIR/proof.jsonl (the signed checkpoints \
            written every 5 s while recording, each naming the recording: id, room, Janus, start, \
            serve job and instance). Checks every signature, that each checkpoint names the one \
            before it by hash and the same recording, that the manifest names the last checkpoint, \
            every signed file's SHA-256 and size, and that the folder (hidden files and subfolders \
            included) holds no file nothing signed. What it prints under OK or UNFINISHED comes \
            from signed data only. Without --public-key or --fingerprint the key named in the \
            files is used: compare its printed fingerprint with the one the operator published. \
            A recording another serve instance took over (failover) goes on in that instance's \
            folder: give every owner's folder (DIR1 DIR2, or their parent) to check one chain.

            Exit codes (docs/proof.md): 0 only for a finished recording whose every byte is \
            proven (its signed final manifest holds); 75 (EX_TEMPFAIL) for an unfinished one: \
            what is there is as signed, proven up to the last checkpoint (a killed recorder, or \
            an earlier owner's folder that goes on past its last checkpoint), the rest unproven; \
            65 (EX_DATAERR) for tampering: any problem, a file nothing signed, or a chain whose \
            last checkpoint marks the end without its signed manifest beside it; 66 when a \
            folder is not there. --json carries the same verdict (`verdict`, `exit`).
            """)

    @Argument(help: ArgumentHelp("The recording folder, or its manifest.json; after a serve failover, the folder of every owner (or one folder holding them), checked as one chain.", valueName: "dir|manifest.json"))
    var paths: [String]

    @Option(help: ArgumentHelp("The expected signer's public key (PEM), or its private key file.", valueName: "file"))
    var publicKey: String?

    @Option(help: ArgumentHelp("The expected signer's fingerprint: SHA-256 of its public key's DER, hex.", valueName: "hex"))
    var fingerprint: String?

    @Flag(help: "Print the result as JSON (canonical, one line).")
    var json = false

    @Flag(help: "List files nothing signed instead of failing on them (a folder that holds more than the recording by design).")
    var allowExtra = false

    func validate() throws {
        if publicKey != nil, fingerprint != nil { throw ValidationError("give --public-key or --fingerprint, not both") }
        if let fingerprint, fingerprint.count != 64 || !fingerprint.allSatisfy(\.isHexDigit) {
            throw ValidationError("--fingerprint is 64 hex digits (SHA-256)")
        }
    }

    func run() throws {
        var folders: [URL] = []
        for path in paths {
            var url = URL(fileURLWithPath: path)
            if url.lastPathComponent == "manifest.json" { url.deleteLastPathComponent() }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue else {
                CLIFailure("\(path) is not a recording folder or its manifest.json", code: .noInput).exit()
            }
            folders.append(url)
        }
        var expected = Verifier.Expected.any
        if let fingerprint { expected = .fingerprint(fingerprint) }
        if let publicKey {
            do { expected = .key(try VerifyingKey(contentsOfFile: publicKey)) } catch {
                CLIFailure("--public-key: \(error)", code: .noInput).exit()
            }
        }
        let report = Verifier(directories: folders, expected: expected, allowExtra: allowExtra).run()
        if json {
            print(String(decoding: Canonical.bytes(report.json), as: UTF8.self))
        } else {
            print(report.text)
        }
        switch report.verdict {
        case .finished: break
        case .unfinished: throw ExitCode(CLIFailure.Code.unfinished.rawValue)
        case .failed: throw ExitCode(CLIFailure.Code.badKey.rawValue)
        }
    }
}
