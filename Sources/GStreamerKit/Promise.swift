internal import CGStreamer
internal import CGStreamerShims
import Synchronization

/// A promise reply's structure, copied out of the promise.
final class Structure: @unchecked Sendable {
    // @unchecked: owned copy, made on the thread that resolved the promise and only read after
    // the awaiting task resumed. That hand-over runs through GstPromise's GLib lock, which
    // ThreadSanitizer cannot see: the release/acquire pair below states it (free on x86).
    private let copied: UnsafeMutablePointer<GstStructure>?
    private let published = Atomic<Bool>(false)
    init(copying p: UnsafePointer<GstStructure>?) {
        copied = p.flatMap { gst_structure_copy($0) }
        published.store(true, ordering: .releasing)
    }
    var pointer: UnsafeMutablePointer<GstStructure>? {
        _ = published.load(ordering: .acquiring)
        return copied
    }
    deinit { if let copied { gst_structure_free(copied) } }
    var text: String { pointer.flatMap { takeGString(gst_structure_to_string($0)) } ?? "" }
}

enum PromiseOutcome: Sendable {
    case replied(Structure)
    case interrupted
    case expired
}

private final class PromiseBox: Sendable {
    let continuation: CheckedContinuation<PromiseOutcome, Never>
    init(_ c: CheckedContinuation<PromiseOutcome, Never>) { continuation = c }
}

/// Runs a GstPromise-taking call and waits for its reply without blocking a thread.
/// The change callback only copies the reply and resumes: it never locks or enters an actor.
func awaitPromise(_ body: (UnsafeMutablePointer<GstPromise>) -> Void) async -> PromiseOutcome {
    var promise: UnsafeMutablePointer<GstPromise>?
    let outcome = await withCheckedContinuation { (c: CheckedContinuation<PromiseOutcome, Never>) in
        let box = Unmanaged.passRetained(PromiseBox(c)).toOpaque()
        let p = gst_promise_new_with_change_func({ promise, data in
            guard let promise, let data else { return }
            let box = Unmanaged<PromiseBox>.fromOpaque(data).takeUnretainedValue()
            switch gst_promise_wait(promise) {  // already resolved: does not block
            case GST_PROMISE_RESULT_REPLIED: box.continuation.resume(returning: .replied(Structure(copying: gst_promise_get_reply(promise))))
            case GST_PROMISE_RESULT_INTERRUPTED: box.continuation.resume(returning: .interrupted)
            default: box.continuation.resume(returning: .expired)
            }
        }, box, { data in
            if let data { Unmanaged<PromiseBox>.fromOpaque(data).release() }
        })!
        promise = p
        body(p)
    }
    if let promise { gst_mini_object_unref(UnsafeMutableRawPointer(promise).assumingMemoryBound(to: GstMiniObject.self)) }
    return outcome
}
