public import Foundation

/// Per-participant key material by index, for formats whose frames name their key
/// (`--key-map` with `--frame-format framecryptor|sframe`): the same JSON as ECall's key map,
/// `{"<participantId>": {"<index>": "<hex>", ...}, ...}`, but material of any length
/// (FrameCryptor derives its key with PBKDF2, SFrame with HKDF).
public enum KeyMaterialMap {
    public static func parse(json: Data, source: String) throws(KeyMapError) -> [String: [UInt64: KeyMaterial]] {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw KeyMapError(.notAnObject(source))
        }
        var out = [String: [UInt64: KeyMaterial]]()
        for (id, value) in object {
            guard !id.isEmpty, let indexes = value as? [String: Any], !indexes.isEmpty else { throw KeyMapError(.badSender(source, id)) }
            var keys = [UInt64: KeyMaterial]()
            for (indexText, hex) in indexes {
                guard let index = UInt64(indexText) else { throw KeyMapError(.badIndex(source, id, indexText)) }
                guard let hex = hex as? String, let material = try? KeyMaterial(hex: hex) else {
                    throw KeyMapError(.badMaterial(source, id, indexText))
                }
                keys[index] = material
            }
            out[id] = keys
        }
        return out
    }

    public static func read(contentsOfFile path: String) throws(KeyMapError) -> [String: [UInt64: KeyMaterial]] {
        guard let data = FileManager.default.contents(atPath: path) else { throw KeyMapError(.unreadable(path)) }
        return try parse(json: data, source: path)
    }
}
