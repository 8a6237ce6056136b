public import Foundation
import Synchronization
import Locking

/// A child process a test awaits without holding a thread of Swift's cooperative pool.
///
/// The pool has one thread per core (2 on CI): two tests blocked in `waitUntilExit` or
/// `readDataToEndOfFile` there stall every other test, bots included. The exit arrives through
/// `terminationHandler`, set before the process starts (one set later can miss an early exit);
/// captured pipes are read to their end on threads of their own, both at once, so a child that
/// fills one pipe's buffer never blocks on it.
public final class ChildProcess: Sendable {
    public struct Finished: Sendable {
        public var status: Int32
        public var out: Data
        public var err: Data
        public var outText: String { String(decoding: out, as: UTF8.self) }
        public var errText: String { String(decoding: err, as: UTF8.self) }
    }

    public struct LaunchFailed: Error, CustomStringConvertible {
        public let command: String, underlying: any Error
        public var description: String { "cannot start \(command): \(underlying)" }
    }

    public let pid: Int32
    // `Process` is thread-safe for what is used here (`isRunning`, the pid); corelibs marks it
    // @unchecked Sendable.
    private let process: Process
    private let status = OneShot<Int32>()
    private let out: OneShot<Data>?
    private let err: OneShot<Data>?

    /// Starts `executable`; with `capture`, its standard output and error are kept (read them
    /// with `finished()`), otherwise they go to /dev/null.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, capture: Bool = true) throws {
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        if let environment { p.environment = environment }
        p.standardInput = FileHandle.nullDevice
        let outPipe = capture ? Pipe() : nil, errPipe = capture ? Pipe() : nil
        p.standardOutput = outPipe ?? FileHandle.nullDevice
        p.standardError = errPipe ?? FileHandle.nullDevice
        let status = self.status
        p.terminationHandler = { status.set($0.terminationStatus) }
        do { try p.run() } catch { throw LaunchFailed(command: executable.path, underlying: error) }
        process = p
        pid = p.processIdentifier
        out = outPipe.map { Self.drain($0.fileHandleForReading) }
        err = errPipe.map { Self.drain($0.fileHandleForReading) }
    }

    public convenience init(_ path: String, _ arguments: [String], environment: [String: String]? = nil, capture: Bool = true) throws {
        try self.init(URL(fileURLWithPath: path), arguments, environment: environment, capture: capture)
    }

    /// Runs a command to its end.
    public static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Finished {
        try await ChildProcess(path, arguments, environment: environment).finished()
    }

    public var isRunning: Bool { process.isRunning }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Its exit status, once it exited. Not cut short by cancellation: cleanup steps (a
    /// firewall rule removed) must be seen through.
    public func exit() async -> Int32 { await status.value() }

    /// Its exit status, or nil if it still runs after `limit` (or the task is cancelled).
    public func exit(within limit: Duration) async -> Int32? {
        await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await self.status.valueUnlessCancelled() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Waits for the exit and the end of both captured outputs.
    public func finished() async -> Finished {
        let status = await exit()
        return Finished(status: status, out: await out?.value() ?? Data(), err: await err?.value() ?? Data())
    }

    private static func drain(_ handle: FileHandle) -> OneShot<Data> {
        let result = OneShot<Data>()
        let thread = Thread { result.set(handle.readDataToEndOfFile()) }
        thread.name = "test.pipe-reader"
        thread.start()
        return result
    }
}

/// A value set once, awaited by any number of tasks.
public final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([Int: CheckedContinuation<Value?, Never>], next: Int)
        case done(Value)
    }
    private let state = Locked(State.waiting([:], next: 0))

    /// Sets the value (the first call wins) and wakes every waiter.
    public func set(_ value: Value) {
        let waiters = state.withLock { s -> [CheckedContinuation<Value?, Never>] in
            guard case .waiting(let w, _) = s else { return [] }
            s = .done(value)
            return Array(w.values)
        }
        for c in waiters { c.resume(returning: value) }
    }

    /// The value, however long it takes: cancellation does not cut it short.
    public func value() async -> Value {
        let id = newWaiter()
        // Registered without a cancellation check, this waiter is only ever resumed by `set`.
        return await withCheckedContinuation { c in wait(id, c, unlessCancelled: false) }!
    }

    /// The value, or nil as soon as the task is cancelled.
    public func valueUnlessCancelled() async -> Value? {
        let id = newWaiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { c in wait(id, c, unlessCancelled: true) }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Value?, Never>? in
                guard case .waiting(var w, let next) = s, let c = w.removeValue(forKey: id) else { return nil }
                s = .waiting(w, next: next)
                return c
            }
            c?.resume(returning: nil)
        }
    }

    private func newWaiter() -> Int {
        state.withLock { s in
            guard case .waiting(let w, let next) = s else { return -1 }
            s = .waiting(w, next: next + 1)
            return next
        }
    }

    /// Resumes `c` at once if the value is there (or, `unlessCancelled`, the task is cancelled);
    /// otherwise keeps it for `set`. Under the lock, so a cancellation handler that runs at the
    /// same time either finds it or was seen through `Task.isCancelled`.
    private func wait(_ id: Int, _ c: CheckedContinuation<Value?, Never>, unlessCancelled: Bool) {
        let now = state.withLock { s -> Value?? in
            switch s {
            case .done(let v): return .some(v)
            case .waiting(var w, let next):
                if unlessCancelled, Task.isCancelled { return .some(nil) }
                w[id] = c
                s = .waiting(w, next: next)
                return nil
            }
        }
        if let now { c.resume(returning: now) }
    }
}
