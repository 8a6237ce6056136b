import Foundation
import Logging

extension RoomRecording {
    /// The room was destroyed: every publisher left with it (their files were finished as they
    /// left), and the recording ends as if stopped.
    func roomDestroyed() {
        guard state == .recording else { return }
        log.notice("room \(config.room) was destroyed: the call is over, the recording ends")
        timeline.append(.init(time: Date(), event: "destroyed", feedID: 0, display: ""))
        roomGone.continuation.yield()
    }
}
