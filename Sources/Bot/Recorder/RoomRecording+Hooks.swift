/// Points where a test runs code of its own, to force an interleaving the scheduler allows but
/// seldom picks (`RecorderRaceTests`). Each does nothing outside tests.
extension RoomRecording {
    struct Hooks: Sendable {
        /// A rejoin's new session and roster are up and `stillWanted` said yes, before the
        /// actor takes them: `finish()` may run here.
        var rejoinStillWanted: @Sendable () async -> Void = {}
        /// A publisher left: its branches are detached and being finished, not yet in the
        /// manifest's feeds. `finish()` may run here.
        var publisherLeaving: @Sendable () async -> Void = {}
    }
}
