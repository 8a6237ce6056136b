import ArgumentParser
import FrameCrypto
import Foundation

/// `sfubot keys`: the bot's ECall device identity (ECALL-WIRE §5).
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make, import and show the bot's ECall device identity key.",
        discussion: """
            The identity key is what ECall wraps call keys for. DIR/identity.key holds the private \
            key (PKCS#8 PEM, created 0600, never overwritten); DIR/identity.pub its public key in \
            ECall's wire form (P-256: base64 of the raw 64-byte X‖Y; RSA: base64 of PKCS#1 DER).
            """,
        subcommands: [Generate.self, Import.self, Show.self, SigningKeyCommand.self])

    static let privateName = "identity.key", publicName = "identity.pub"

    /// Writes both files and prints the public key and its hash.
    static func store(_ id: DeviceIdentity, in dir: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let keyPath = (dir as NSString).appendingPathComponent(privateName)
            try id.write(toNewFile: keyPath)
            try Data((id.publicKey.wire + "\n").utf8).write(to: URL(fileURLWithPath: (dir as NSString).appendingPathComponent(publicName)))
            print("private key: \(keyPath) (0600)")
        } catch let e as IdentityError {
            throw CLIFailure(e.description, code: .cannotWrite)
        } catch {
            throw CLIFailure("cannot write into \(dir): \(error.localizedDescription)", code: .cannotWrite)
        }
        printPublic(id)
    }

    static func printPublic(_ id: DeviceIdentity) {
        print("type: \(id.kind == .p256 ? "P-256" : "RSA-2048")")
        print("public key: \(id.publicKey.wire)")
        print("public key hash: \(id.publicKey.hash)")
    }

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a new identity key.")
        @Option(help: "p256 (preferred by ECall) or rsa (2048 bits).")
        var type: KeyType = .p256
        @Option(help: ArgumentHelp("Folder for identity.key and identity.pub.", valueName: "dir"))
        var out: String

        func run() throws {
            do {
                try Keys.store(try DeviceIdentity.generate(type.kind), in: out)
            } catch let e as CLIFailure { e.exit() }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take an existing private key (PEM or DER; PKCS#8, SEC1 or PKCS#1) as the identity.")
        @Argument(help: "The private key file.")
        var file: String
        @Option(help: ArgumentHelp("Folder for identity.key and identity.pub.", valueName: "dir"))
        var out: String

        func run() throws {
            do {
                let id: DeviceIdentity
                do { id = try DeviceIdentity(contentsOfFile: file) } catch { throw CLIFailure(error.description, code: .badKey) }
                try Keys.store(id, in: out)
            } catch let e as CLIFailure { e.exit() }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print an identity's type, public key and hash.")
        @Option(help: ArgumentHelp("The private key file.", valueName: "path"))
        var key: String

        func run() throws {
            do {
                Keys.printPublic(try DeviceIdentity(contentsOfFile: key))
            } catch {
                CLIFailure(error.description, code: .badKey).exit()
            }
        }
    }
}

/// `--type`, as the command line spells it.
enum KeyType: String, ExpressibleByArgument {
    case p256, rsa
    var kind: DeviceIdentity.Kind { self == .p256 ? .p256 : .rsa }
}
