internal import CGStreamer
internal import CGStreamerShims
import Synchronization
import Locking

/// A handler connected to a GObject signal; `disconnect()` (or dropping the last reference)
/// removes it. The handler's user data is released by GLib's destroy-notify, so a handler that
/// is running on another thread during the disconnect never sees freed memory.
public final class SignalConnection: Sendable {
    private let instance: UnsafeSendable<UnsafeMutableRawPointer>
    private let id: Locked<gulong>

    /// Connects `handler` (a `@convention(c)` function of the signal's own signature, cast to
    /// `GCallback`) with `data`, which `release` frees when the connection ends.
    convenience init(_ element: Element, signal: String, handler: GCallback, data: UnsafeMutableRawPointer, release: GClosureNotify) {
        self.init(object: UnsafeMutableRawPointer(element.pointer), signal: signal, handler: handler, data: data, release: release)
    }

    /// The same for any GObject (a data channel is not an element).
    init(object: UnsafeMutableRawPointer, signal: String, handler: GCallback, data: UnsafeMutableRawPointer, release: GClosureNotify) {
        instance = UnsafeSendable(object)
        // Keep the instance alive as long as the connection may be disconnected.
        g_object_ref(instance.value)
        id = Locked(sfb_signal_connect(instance.value, signal, handler, data, release))
    }

    public func disconnect() {
        let current = id.withLock { id in defer { id = 0 }; return id }
        if current != 0 { g_signal_handler_disconnect(instance.value, current) }
    }

    deinit {
        disconnect()
        g_object_unref(instance.value)
    }
}
