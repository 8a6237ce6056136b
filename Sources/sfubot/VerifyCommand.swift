import ArgumentParser
import Foundation
import Proof

/// `sfubot verify`: an auditor's check of a recording folder (docs/proof.md).
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a recording's signatures, checkpoint chain and every file's hash and size.",
        discussion: """
            Reads DIR/manifest.json (its signed `proof`) and DIR/proof.jsonl (the signed checkpoints \
            written every 5 s while recording). Checks every signature, that each checkpoint names \
            the one before it by hash and that the manifest names the last, every signed file's \
            SHA-256 and size, and that no listed file is missing; media files nothing signed names \
            are reported. A recording whose recorder was killed has no signed manifest: the last \
            checkpoint proves each file's first bytes, and the summary says how far. Without \
            --public-key or --fingerprint the key named in the files is used: compare its printed \
            fingerprint with the one the operator published. Exit 0 only if everything holds; \
            otherwise each problem is named (file, checkpoint, offset) and the exit is 65. A \
            recording another serve instance took over (failover) goes on in that instance's \
            folder: give every owner's folder (DIR1 DIR2, or their parent) to check one chain.
            """)

    @Argument(help: ArgumentHelp("The recording folder, or its manifest.json; after a serve failover, the folder of every owner (or one folder holding them), checked as one chain.", valueName: "dir|manifest.json"))
    var paths: [String]

    @Option(help: ArgumentHelp("The expected signer's public key (PEM), or its private key file.", valueName: "file"))
    var publicKey: String?

    @Option(help: ArgumentHelp("The expected signer's fingerprint: SHA-256 of its public key's DER, hex.", valueName: "hex"))
    var fingerprint: String?

    @Flag(help: "Print the result as JSON (canonical, one line).")
    var json = false

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
        let report = Verifier(directories: folders, expected: expected).run()
        if json {
            print(String(decoding: Canonical.bytes(report.json), as: UTF8.self))
        } else {
            print(report.text)
        }
        if !report.ok { throw ExitCode(CLIFailure.Code.badKey.rawValue) }
    }
}
