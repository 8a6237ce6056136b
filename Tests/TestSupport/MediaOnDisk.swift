public import Foundation

/// Whether a media file directly in `folder` (not the manifest, not the hidden reserve) holds at
/// least `bytes`: a recorder's media reached the disk. Waited on (with `eventually`) where a test must know the recording has begun, in place
/// of a sleep sized for a quiet machine.
public func mediaOnDisk(in folder: URL, bytes: Int = 16 * 1024) -> Bool {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".json") }.contains { name in
        let size = (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as? Int) ?? 0
        return size >= bytes
    }
}
