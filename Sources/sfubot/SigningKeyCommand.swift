import ArgumentParser
import Foundation
import Proof

/// `sfubot keys signing-key`: the recorder's signing key (docs/proof.md).
struct SigningKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing-key",
        abstract: "Make a recorder signing key (for record/serve --signing-key) and print its public key and fingerprint.",
        discussion: """
            Writes the private key to FILE (PKCS#8 PEM, created 0600, never over an existing file) \
            and FILE.pub (the public key, PEM). Prints the public key (PEM, and base64 of its DER) \
            and its fingerprint: SHA-256 of the public key's SubjectPublicKeyInfo DER, hex. Publish \
            the fingerprint to the participants; `sfubot verify --fingerprint` checks against it. \
            With --show, prints those of an existing key instead.
            """)

    @Option(help: ArgumentHelp("The private key file to create (or to read, with --show).", valueName: "file"))
    var out: String

    @Option(help: "p256 (ECDSA P-256 with SHA-256) or ed25519.")
    var type: SigningKeyType = .p256

    @Flag(help: "Read the existing key in --out and print its public key and fingerprint.")
    var show = false

    func run() throws {
        let key: SigningKey
        do {
            if show {
                key = try SigningKey(contentsOfFile: out)
            } else {
                key = SigningKey.generate(type.kind)
                try key.write(toNewFile: out)
                try Data((key.publicKey.pem + "\n").utf8).write(to: URL(fileURLWithPath: out + ".pub"))
                print("private key: \(out) (0600)")
                print("public key file: \(out).pub")
            }
        } catch let e as SigningKeyError {
            CLIFailure(e.description, code: show ? .badKey : .cannotWrite).exit()
        }
        print("type: \(key.publicKey.algorithm)")
        print(key.publicKey.pem)
        print("public key (base64 DER): \(key.publicKey.der.base64EncodedString())")
        print("fingerprint: \(key.publicKey.fingerprint)")
    }
}

/// `--type`, as the command line spells it.
enum SigningKeyType: String, ExpressibleByArgument {
    case p256, ed25519
    var kind: SigningKey.Kind { self == .p256 ? .p256 : .ed25519 }
}

/// `--signing-key FILE` for record and serve.
enum SigningKeyOption {
    static let help = "Sign the recording with this key (PKCS#8 PEM, P-256 or Ed25519, 0600; see `sfubot keys signing-key`): checkpoints every 5 s in proof.jsonl and a signed proof in manifest.json, checked by `sfubot verify`. Without it nothing is signed."

    static func load(_ path: String?) -> SigningKey? {
        guard let path else { return nil }
        do { return try SigningKey(contentsOfFile: path) } catch { CLIFailure("--signing-key: \(error)", code: .badKey).exit() }
    }
}
