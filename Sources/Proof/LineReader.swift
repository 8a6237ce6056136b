import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `proof.jsonl` read one line at a time through a 1 MiB buffer: memory stays bounded by the
/// longest line kept (`maxLine`), whatever the file's size. A longer line is skipped to its end
/// and reported by its length only. Opened without following a symbolic link, and only if it
/// is a regular file (never a FIFO or a device that reads forever).
struct LineReader: ~Copyable {
    /// Longer than any checkpoint the recorder writes (one of 1000 tracks is about 400 KB).
    static let maxLine = 4 << 20

    enum Item {
        /// A line's bytes, without its `\n`; `terminated` is false for a last line without one.
        case line([UInt8], terminated: Bool)
        /// A line longer than `maxLine` bytes, skipped.
        case tooLong(bytes: Int)
    }

    enum Failure: Error, Equatable { case missing, notRegular, unreadable(String) }

    private let fd: Int32
    private let maxLine: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var start = 0, end = 0
    private var atEnd = false

    init(_ url: URL, maxLine: Int = LineReader.maxLine) throws(Failure) {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw errno == ENOENT ? .missing : errno == ELOOP ? .notRegular : .unreadable(String(cString: strerror(errno)))
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { close(fd); throw .notRegular }
        self.fd = fd
        self.maxLine = maxLine
    }

    deinit { close(fd) }

    mutating func next() -> Item? {
        var line: [UInt8] = []
        var skipped = 0
        while true {
            if start == end {
                guard !atEnd else { break }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { atEnd = true; break }
                (start, end) = (0, n)
            }
            // memchr, not a Collection search: this runs over every byte of the file.
            let (from, to) = (start, end)
            let newline: Int? = buffer.withUnsafeBytes { raw in
                memchr(raw.baseAddress! + from, 0x0A, to - from).map { UnsafeRawPointer($0) - raw.baseAddress! }
            }
            let stop = newline ?? end
            if skipped > 0 || line.count + (stop - start) > maxLine {
                skipped += line.count + stop - start
                line = []
            } else {
                buffer.withUnsafeBufferPointer { line.append(contentsOf: UnsafeBufferPointer(rebasing: $0[from..<stop])) }
            }
            start = newline.map { $0 + 1 } ?? end
            if newline != nil { return skipped > 0 ? .tooLong(bytes: skipped) : .line(line, terminated: true) }
        }
        if skipped > 0 { return .tooLong(bytes: skipped) }
        return line.isEmpty ? nil : .line(line, terminated: false)
    }
}
