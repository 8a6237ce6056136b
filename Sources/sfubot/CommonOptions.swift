import PrivateIO
import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Janus
import Locking
import Logging

/// The call key, or explicitly none.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Call key as 64 hex characters.", valueName: "hex"))
    var keyHex: String?

    @Option(help: ArgumentHelp("File holding the call key: 32 raw bytes or 64 hex characters.", valueName: "path"))
    var keyFile: String?

    @Option(help: ArgumentHelp(
        "Per-sender keys: JSON {\"<participantId>\": {\"<index>\": \"<hex key>\", ...}, ...}. Each feed is opened with its sender's keys (participant id from its display \"<id>:<name>\", else its feed id), newest index first; a sender seals with its own newest key.",
        valueName: "path"))
    var keyMap: String?

    @Flag(help: "Send and receive media without frame encryption.")
    var noE2ee = false

    @OptionGroup var format: FormatOptions

    func validate() throws {
        let given = [keyHex != nil, keyFile != nil, keyMap != nil, noE2ee].filter { $0 }.count
        // A key feed alone is enough for formats whose keys come while the call runs.
        let feedOnly = given == 0 && format.keyFeed != nil
        guard given == 1 || feedOnly else { throw ValidationError("give exactly one of --key-hex, --key-file, --key-map or --no-e2ee") }
        if noE2ee && format.frameFormat != .ecall { throw ValidationError("--no-e2ee sends in the clear: it takes no --frame-format") }
    }

    /// Starts `--key-feed` into `protection`'s keys, if given.
    func startFeed(_ protection: FrameProtection, logger: Logger) throws -> KeyFeed? {
        guard let path = format.keyFeed, case .indexed(let p) = protection else { return nil }
        if path != "-" { Self.warnIfOthersCanRead(path) }
        do { return try KeyFeed.start(path: path, keys: p.keys, logger: logger) } catch {
            throw CLIFailure(String(describing: error), code: .noInput)
        }
    }

    /// The keys of a format whose frames name their key: `--key-hex`/`--key-file` as the shared
    /// key, `--key-map` as each participant's; `sender` is who this bot seals as.
    private func indexedProtection(sender: String) throws -> FrameProtection {
        var shared: KeyMaterial?
        if let keyHex {
            do { shared = try KeyMaterial(hex: keyHex) } catch {
                throw CLIFailure("--key-hex: key material is an even number of hex characters (1 to \(KeyMaterial.maxCount) bytes)", code: .badKey)
            }
        } else if let keyFile {
            shared = try Self.material(file: keyFile)
        }
        var own = [String: [UInt64: KeyMaterial]]()
        if let keyMap {
            do { own = try KeyMaterialMap.read(contentsOfFile: keyMap) } catch { throw CLIFailure(String(describing: error), code: .badKey) }
            Self.warnIfOthersCanRead(keyMap)
        }
        return try format.protection(shared: shared, own: own, sender: sender)
    }

    /// Key material from a file: hex text if it reads as such, else its raw bytes.
    private static func material(file: String) throws -> KeyMaterial {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CLIFailure("cannot read key file \(file): check the path and its permissions", code: .badKey)
        }
        warnIfOthersCanRead(file)
        if let text = String(data: data, encoding: .utf8), let m = try? KeyMaterial(hex: text) { return m }
        do { return try KeyMaterial(Array(data)) } catch {
            throw CLIFailure("key file \(file) holds \(data.count) bytes; key material is 1 to \(KeyMaterial.maxCount) bytes", code: .badKey)
        }
    }

    /// The key map of `--key-map`, read once (ECall's: 32-byte keys).
    func map() throws -> KeyMap? {
        guard let keyMap, format.frameFormat == .ecall else { return nil }
        do {
            let map = try KeyMap(contentsOfFile: keyMap)
            Self.warnIfOthersCanRead(keyMap)
            return map
        } catch { throw CLIFailure(String(describing: error), code: .badKey) }
    }

    /// The protection of a bot that sends as `display` (`<participantId>:<name>`): with a key map,
    /// its own newest key; else as `protection()`.
    func sendingProtection(display: String) throws -> FrameProtection {
        if !noE2ee, format.frameFormat != .ecall {
            // It seals as the id a subscriber reads from its display under the same rule.
            return try indexedProtection(sender: (format.participantId ?? .displayPrefix).id(display: display, feedID: nil))
        }
        guard let map = try map() else { return try protection() }
        let id = KeyMap.participantID(display: display) ?? ""
        guard let key = map.senders[id]?.newest else {
            throw CLIFailure("--key-map \(keyMap!) has no key for participant \"\(id)\" (from --display \(display)); senders: \(map.senders.keys.sorted().joined(separator: ", "))", code: .badKey)
        }
        return .e2ee(KeyRing(current: key))
    }

    /// `protection()` on a thread of its own: a FrameCryptor key is a PBKDF2 of 100 000 rounds,
    /// and a key map of many participants would hold a pool thread for seconds.
    func protectionOffPool() async throws -> FrameProtection {
        try await OffPool.run { [self] in try protection() }
    }

    /// `sendingProtection(display:)` off the pool, as `protectionOffPool()`.
    func sendingProtectionOffPool(display: String) async throws -> FrameProtection {
        try await OffPool.run { [self] in try sendingProtection(display: display) }
    }

    func protection() throws -> FrameProtection {
        if noE2ee { return .none }
        if format.frameFormat != .ecall { return try indexedProtection(sender: "") }
        if let map = try map() { return .perSender(map) }
        return .e2ee(KeyRing(current: try Self.callKey(hex: keyHex, file: keyFile ?? "")))
    }

    /// The call key of `--key-hex` (if given) or `--key-file`, with errors that name the option.
    static func callKey(hex keyHex: String?, file keyFile: String) throws -> CallKey {
        do {
            if let keyHex {
                // Said here, with the option's name: CallKey only knows bytes.
                let hex = keyHex.trimmingCharacters(in: .whitespacesAndNewlines)
                guard hex.count == 64 else {
                    throw CLIFailure("--key-hex has \(hex.count) characters; a call key is 64 hex characters (32 bytes)", code: .badKey)
                }
                guard hex.utf8.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit }) else {
                    throw CLIFailure("--key-hex is not hexadecimal: a call key is 64 characters 0-9a-f", code: .badKey)
                }
                return try CallKey(hex: hex)
            }
            let key = try CallKey(contentsOfFile: keyFile)
            warnIfOthersCanRead(keyFile)
            return key
        } catch let e as CLIFailure {
            throw e
        } catch KeyError.badFile(let path) {
            // Say what the file holds, not only what it should.
            let size = FileManager.default.contents(atPath: path)?.count ?? 0
            throw CLIFailure("key file \(path) holds \(size) bytes; a call key file holds 32 raw bytes or 64 hex characters", code: .badKey)
        } catch {
            throw CLIFailure(String(describing: error), code: .badKey)
        }
    }

    /// A call key decrypts the whole call: a key file others can read deserves a word.
    private static func warnIfOthersCanRead(_ path: String) {
        guard let octal = PrivateFile.openToOthers(path) else { return }
        FileHandle.standardError.write(Data("sfubot: warning: key file \(path) is open to other users (mode \(octal)); chmod 600 it\n".utf8))
    }
}

/// Numbers and ports from the command line, checked before anything runs: a value out of
/// range would trap where it becomes a `Duration` or an `Int`, or wrap where it becomes a
/// port (99999 was 34463). Each failure is a usage error (exit 64) naming the option and its range.
enum OptionCheck {
    /// The longest time any option takes: 365 days.
    static let maxSeconds: Double = 365 * 24 * 3600

    /// A number of seconds: finite, above 0 (or 0 too, where 0 means "until stopped"), at most
    /// `maxSeconds`. Returns it as a `Duration` (nil for an absent option).
    @discardableResult
    static func seconds(_ value: Double?, _ option: String, zeroAllowed: Bool = false) throws(ValidationError) -> Duration? {
        guard let value else { return nil }
        guard value.isFinite, zeroAllowed ? value >= 0 : value > 0, value <= maxSeconds else {
            throw ValidationError("\(option) takes \(zeroAllowed ? "0" : "more than 0") to \(Int(maxSeconds)) seconds (365 days), got \(value)")
        }
        return .seconds(value)
    }

    /// A whole number within `range`.
    static func count(_ value: Int?, _ option: String, in range: ClosedRange<Int>) throws(ValidationError) {
        guard let value, !range.contains(value) else { return }
        throw ValidationError("\(option) takes \(range.lowerBound) to \(range.upperBound), got \(value)")
    }

    /// A TCP port: 1–65535.
    static func port(_ value: Int?, _ option: String) throws(ValidationError) {
        try count(value, option, in: 1...65535)
    }

    /// The port of a URL, if it names one: `scheme://[user@]host[:port][/path]`.
    static func url(_ text: String, _ option: String) throws(ValidationError) {
        guard let schemeEnd = text.range(of: "://") else { return }
        let rest = text[schemeEnd.upperBound...]
        var authority = rest.prefix { !"/?#".contains($0) }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        // An IPv6 host is bracketed: the port follows the "]".
        let hostEnd = authority.hasPrefix("[") ? authority.firstIndex(of: "]") : authority.startIndex
        guard let hostEnd, let colon = authority[hostEnd...].lastIndex(of: ":") else { return }
        let port = authority[authority.index(after: colon)...]
        guard !port.isEmpty else { return }
        guard port.allSatisfy(\.isASCII) && port.allSatisfy(\.isNumber), let n = Int(port), (1...65535).contains(n) else {
            throw ValidationError("\(option): the port takes 1 to 65535, got \(port)")
        }
    }
}

/// `--key-log FILE`: opened (0600, refused if others can read it) with a warning on stderr.
enum KeyLogOption {
    static func open(_ path: String?) throws -> KeyLog? {
        guard let path else { return nil }
        let log: KeyLog
        do { log = try KeyLog(path: path) } catch { throw CLIFailure(String(describing: error), code: .badKey) }
        FileHandle.standardError.write(Data((KeyLog.warning(path) + "\n").utf8))
        return log
    }

    /// Logs the keys `record` starts with (ECall's stay in use: no rotation), or, for a format
    /// whose frames name their key, every key it holds and each one set later. `call` is the room id.
    static func logStart(_ log: KeyLog?, _ protection: FrameProtection, call: Int64) {
        guard let log else { return }
        let now = Date().timeIntervalSince1970
        switch protection {
        case .e2ee(let ring): if let key = ring.sealingKey { log.append(call: call, key: key, from: now) }
        case .perSender(let map):
            for (id, sender) in map.senders.sorted(by: { $0.key < $1.key }) {
                for k in sender.keys.reversed() { log.append(call: call, key: k.key, from: now, index: k.index, participant: id) }
            }
        case .indexed(let p):
            // Every key the call holds now, and each one handed in or ratcheted later (--key-feed).
            let format = p.keys.formatName
            p.keys.observeKeys { participant, index, material in
                log.append(call: call, format: format, material: material, index: index, participant: participant, from: Date().timeIntervalSince1970)
            }
        case .none: break
        }
    }
}

extension LoggingSystem {
    private static let once: Void = LoggingSystem.bootstrap { ComponentLogHandler(label: $0) }
    static func bootstrapOnce() { _ = once }
}
