import ArgumentParser
import Logging

/// `-v` / `-vv`: the one mapping from verbosity to log level, for every command.
struct LogOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log more (-v: debug, -vv: trace). Keys and tokens are never logged.")
    var verbose: Int

    var level: Logger.Level { verbose >= 2 ? .trace : verbose == 1 ? .debug : .info }

    func logger(_ label: String) -> Logger {
        LoggingSystem.bootstrapOnce()
        var l = Logger(label: label)
        l.logLevel = level
        return l
    }
}
