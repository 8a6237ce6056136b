// The ECall backend STAND-IN as a process, for local runs: `swift run ecall-standin [PORT]`
// serves http://127.0.0.1:PORT/app/api (default 8480) until Ctrl-C. Not the real backend: see
// deploy/dev/README.md for what it checks and what it leaves out; the code is in Sources/ECallStandIn.
import ECallStandIn
import Foundation

let port = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 8480
let backend = ECallStandIn()
let url = try await backend.start(port: port)
let c = backend.configuration
print("ecall-standin: \(url) (api id \(c.apiID), api secret \(c.apiSecret), OTP \(c.otp)); Ctrl-C stops it")
signal(SIGINT, SIG_IGN)
let stop = DispatchSource.makeSignalSource(signal: SIGINT)
await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    stop.setEventHandler { done.resume() }
    stop.resume()
}
await backend.stop()
