import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Locking
import Logging
import Mjr

/// `sfubot mjr`: Janus's own recordings (`.mjr`) of ECall rooms.
struct Mjr: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mjr",
        abstract: "Work with the .mjr files Janus records itself (VideoRoom `record: true`).",
        subcommands: [Decrypt.self])

    struct Decrypt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decrypt .mjr recordings of an E2EE room into playable files.",
            discussion: """
                Janus records what it relays: in an ECall room that is ciphertext, which janus-pp-rec \
                cannot use. Each audio .mjr becomes DIR/<name>.opus (Ogg); a video .mjr, with the \
                same publisher's audio .mjr if given too, DIR/<name>.mkv, aligned by the files' start \
                times. Nothing is re-encoded. A frame no key opens is dropped and counted, never \
                written. DIR/manifest.json lists the counters per file. Files 0600, DIR 0700.
                Exit codes: 66 an input is missing or no .mjr recording, 65 a bad key, 73 DIR \
                cannot be written, 70 an output could not be written.
                """)

        @Argument(help: ArgumentHelp("The .mjr files (audio and video of a publisher may be given together).", valueName: "file"))
        var files: [String]

        @Option(help: ArgumentHelp("Call key as 64 hex characters.", valueName: "hex"))
        var keyHex: String?

        @Option(help: ArgumentHelp("File holding the call key: 32 raw bytes or 64 hex characters.", valueName: "path"))
        var keyFile: String?

        @Option(help: ArgumentHelp(
            "Key log written by `agent`/`record --key-log`: ECall: each frame is opened with the key in use at its time, then the ones before and after; framecryptor, sframe: with the key of its index and sender.",
            valueName: "path"))
        var keyLog: String?

        @Option(help: ArgumentHelp(
            "Per-sender keys (JSON {\"<participantId>\": {\"<index>\": \"<hex>\"}}): each file is opened with the keys of its sender, the Janus user id in its name.",
            valueName: "path"))
        var keyMap: String?

        @Option(help: ArgumentHelp("Folder for the decrypted files and manifest.json (created 0700).", valueName: "dir"))
        var out: String

        @Option(help: ArgumentHelp("Sign manifest.json with this key (as record --signing-key): the outputs and the .mjr inputs by SHA-256 and size, checked by `sfubot verify`. Without it nothing is signed.", valueName: "file"))
        var signingKey: String?

        @OptionGroup var format: FormatOptions
        @OptionGroup var pipeline: PipelineOptions
        @OptionGroup var log: LogOptions

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("give at least one .mjr file") }
            let given = [keyHex, keyFile, keyLog, keyMap].compactMap { $0 }.count
            guard given == 1 else { throw ValidationError("give exactly one of --key-hex, --key-file, --key-log or --key-map") }
        }

        func keySource() throws -> any MjrKeySource {
            if format.frameFormat != .ecall {
                var shared: KeyMaterial?
                if let keyHex {
                    do { shared = try KeyMaterial(hex: keyHex) } catch { throw CLIFailure("--key-hex: \(error)", code: .badKey) }
                }
                var own = [String: [UInt64: KeyMaterial]]()
                if let keyMap {
                    do { own = try KeyMaterialMap.read(contentsOfFile: keyMap) } catch { throw CLIFailure(String(describing: error), code: .badKey) }
                }
                guard case .indexed(let p) = try format.protection(shared: shared, own: own, sender: "") else { preconditionFailure("an indexed format") }
                if let keyLog {
                    // A record --key-log of this format: each key at the index it had, the first material of each.
                    let logged: (shared: [UInt64: KeyMaterial], own: [String: [UInt64: KeyMaterial]])
                    do { logged = try KeyLog.material(path: keyLog, format: format.frameFormat) } catch { throw CLIFailure(String(describing: error), code: .badKey) }
                    guard !logged.shared.isEmpty || !logged.own.isEmpty else {
                        throw CLIFailure("--key-log \(keyLog) holds no \(format.frameFormat.rawValue) key", code: .badKey)
                    }
                    do {
                        for (index, material) in logged.shared { try p.keys.set(participant: nil, index: index, material: material) }
                        for (participant, keys) in logged.own { for (index, material) in keys { try p.keys.set(participant: participant, index: index, material: material) } }
                    } catch { throw CLIFailure("--key-log \(keyLog): \(error)", code: .badKey) }
                }
                return p.mjrKeys()
            }
            do {
                if let keyLog { return MjrLoggedKeys(try KeyLog.Entries(path: keyLog)) }
                if let keyMap { return MjrSenderKeys(try KeyMap(contentsOfFile: keyMap)) }
            } catch { throw CLIFailure(String(describing: error), code: .badKey) }
            return MjrFixedKey(try KeyOptions.callKey(hex: keyHex, file: keyFile ?? ""))
        }

        func run() async throws {
            do {
                // Off the pool: a FrameCryptor key is a PBKDF2 of 100 000 rounds.
                let keys = try await OffPool.run { [self] in try keySource() }
                let logger = log.logger("mjr")
                let signer = SigningKeyOption.load(signingKey)
                var manifest = try await MjrDecrypt(
                    files: files, keys: keys, directory: URL(fileURLWithPath: out),
                    library: try pipeline.library(), logger: logger
                ).run()
                if let signer {
                    manifest = try await manifest.signed(with: signer, directory: URL(fileURLWithPath: out), inputs: files)
                    try manifest.write(to: URL(fileURLWithPath: out))
                }
                for o in manifest.outputs {
                    let t = o.tracks.map { "\($0.input): \($0.frames.opened)/\($0.frames.received) opened\($0.truncated ? " (cut short)" : "")" }
                    print("\(o.file ?? "(nothing written: no frame opened)"): \(t.joined(separator: "; "))")
                }
                if let failed = manifest.outputs.first(where: { $0.error != nil }) {
                    throw CLIFailure("\(failed.file ?? "an output"): \(failed.error!)", code: .media)
                }
                if let partial = manifest.outputs.first(where: { $0.partial != nil }) {
                    throw CLIFailure("\(partial.partial!) (manifest.json says what is on disk)", code: .incomplete)
                }
            } catch let e as MjrError {
                CLIFailure(e.description, code: .noInput).exit()
            } catch let e as BotError {
                CLIFailure(e).exit()
            } catch let e as CLIFailure {
                e.exit()
            }
        }
    }
}
