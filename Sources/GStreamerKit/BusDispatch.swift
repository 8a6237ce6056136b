internal import CGStreamer
import Synchronization
import Locking

/// Every message of one pipeline's bus, from the pipeline's creation on, handed to the current
/// `messages()` stream or kept until one starts.
///
/// Its sync handler is installed when the pipeline is made, before any other thread can
/// post, and stays until the bus is finalized. Nothing is ever queued inside the GstBus, so
/// there is no drain-then-install moment in which a message from a streaming thread could be
/// left behind (gst_bus_post reads the handler under the bus lock but queues after releasing
/// it, which a drain can never fully close). Handing over and starting a stream take the same
/// lock, so kept messages come out before later ones.
final class BusDispatch: Sendable {
    /// One `messages()` stream; compared by identity.
    private final class Consumer: Sendable {
        let continuation: AsyncStream<BusMessage>.Continuation
        init(_ c: AsyncStream<BusMessage>.Continuation) { continuation = c }
    }

    struct Failure: Sendable {
        let source: String
        let message: String
        let debug: String?
    }

    private struct State {
        var consumer: Consumer?
        /// Messages posted while no stream was reading, oldest first.
        var kept: [BusMessage] = []
        /// The last few errors with their sequence numbers, for `setState`'s report.
        var errors: [(number: UInt64, failure: Failure)] = []
        var errorCount: UInt64 = 0
        var closed = false
    }

    private let state = Locked(State())
    /// Set (release) before the sync handler is installed and read (acquire) at each delivery:
    /// GStreamer hands this object to its streaming threads under GLib's own locks, which
    /// ThreadSanitizer cannot see; this pair makes that publication explicit (free on x86).
    private let published = Atomic<Bool>(false)

    /// Installs the handler. Call once, on the thread that built the pipeline, before
    /// anything can make it run.
    func install(on bus: UnsafeMutablePointer<GstBus>) {
        // Whatever building the pipeline posted (on this thread) comes first.
        while let m = gst_bus_pop(bus) {
            deliver(Bus.convert(m))
            gst_mini_object_unref(UnsafeMutableRawPointer(m).assumingMemoryBound(to: GstMiniObject.self))
        }
        published.store(true, ordering: .releasing)
        gst_bus_set_sync_handler(bus, { _, message, data in
            guard let message, let data else { return GST_BUS_PASS }
            Unmanaged<BusDispatch>.fromOpaque(data).takeUnretainedValue().deliver(Bus.convert(message))
            // DROP means the handler owns the message (GstBusSyncHandler's contract).
            gst_mini_object_unref(UnsafeMutableRawPointer(message).assumingMemoryBound(to: GstMiniObject.self))
            return GST_BUS_DROP
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            // The bus is being finalized: its pipeline is gone, so the stream ends.
            guard let data else { return }
            Unmanaged<BusDispatch>.fromOpaque(data).takeRetainedValue().close()
        })
    }

    /// A stream of the kept messages and every later one. Ends the previous stream.
    func messages() -> AsyncStream<BusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self, bufferingPolicy: .unbounded)
        let consumer = Consumer(continuation)
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { s in if s.consumer === consumer { s.consumer = nil } }
        }
        let (previous, closed) = state.withLock { s -> (Consumer?, Bool) in
            guard !s.closed else { return (nil, true) }
            for m in s.kept { continuation.yield(m) }
            s.kept.removeAll()
            let previous = s.consumer
            s.consumer = consumer
            return (previous, false)
        }
        // Outside the lock: finishing runs the old stream's onTermination, which takes it.
        previous?.continuation.finish()
        if closed { continuation.finish() }
        return stream
    }

    /// How many errors have been posted so far; pass it to `firstError(after:)`.
    var errorMark: UInt64 { state.withLock { $0.errorCount } }

    /// The first error posted after `mark`, if it is still among the last few.
    func firstError(after mark: UInt64) -> Failure? {
        state.withLock { s in s.errors.first { $0.number > mark }?.failure }
    }

    /// Called on whichever thread posted (a streaming thread, or a `setState` caller).
    private func deliver(_ message: BusMessage) {
        _ = published.load(ordering: .acquiring)
        state.withLock { s in
            if case .error(let source, let text, let debug) = message {
                s.errorCount += 1
                s.errors.append((s.errorCount, Failure(source: source, message: text, debug: debug)))
                if s.errors.count > 8 { s.errors.removeFirst() }
            }
            // A stream its reader has dropped but whose onTermination has not run yet
            // answers .terminated: keep the message for the next stream.
            if let consumer = s.consumer {
                if case .terminated = consumer.continuation.yield(message) { s.consumer = nil } else { return }
            }
            guard !s.closed else { return }
            s.kept.append(message)
        }
    }

    private func close() {
        let consumer = state.withLock { s -> Consumer? in
            s.closed = true
            s.kept.removeAll()
            let consumer = s.consumer
            s.consumer = nil
            return consumer
        }
        consumer?.continuation.finish()
    }
}
