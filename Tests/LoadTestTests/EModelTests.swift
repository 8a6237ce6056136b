import Foundation
@testable import LoadTest
import Testing

/// The E-model against values worked by hand from G.107's formulas.
struct EModelTests {
    let model = EModel()

    @Test func mosMappingAtG107Points() {
        #expect(abs(EModel.mos(rating: 93.2) - 4.409) < 0.001)
        #expect(abs(EModel.mos(rating: 50) - 2.575) < 0.001)  // 1 + 1.75 + 50·(−10)·50·7e-6
        #expect(EModel.mos(rating: -5) == 1 && EModel.mos(rating: 120) == 4.5)
    }

    @Test func delayAndLossLowerTheScore() {
        // Codec delay only (26.5 ms): Id = 0.636, R = 92.564.
        #expect(abs(model.rating(oneWayDelayMs: 0, jitterMs: 0, lossPercent: 0) - 92.564) < 0.001)
        // 400 ms one way: d = 426.5, Id = 10.236 + 0.11·249.2 = 37.648.
        #expect(abs(model.rating(oneWayDelayMs: 400, jitterMs: 0, lossPercent: 0) - 55.552) < 0.001)
        // 5 % random loss, Bpl 20: Ie,eff = 95·5/25 = 19.
        #expect(abs(model.rating(oneWayDelayMs: 0, jitterMs: 0, lossPercent: 5) - 73.564) < 0.001)
        // Jitter counts twice (the buffer): 10 ms jitter = 20 ms more delay.
        #expect(abs(model.rating(oneWayDelayMs: 0, jitterMs: 10, lossPercent: 0) - (92.564 - 0.48)) < 0.001)
        let grid = [0.0, 1, 5, 20].map { model.mos(oneWayDelayMs: 20, jitterMs: 5, lossPercent: $0) }
        #expect(grid == grid.sorted(by: >) && grid.first! > 4.3 && grid.last! < 3)
    }
}

struct ProcessSampleTests {
    @Test func parsesStatWithSpacesAndParenthesesInTheName() throws {
        let stat = "4242 (sfubot (load) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 37 0 100 1000000 512 18446744073709551615"
        let s = try #require(ProcessSample.parse(stat: stat, statm: "300000 2560 100 1 0 2000 0", ticksPerSecond: 100, pageSize: 4096))
        #expect(s.cpuSeconds == 3 && s.kernelSeconds == 0.5 && s.threads == 37 && s.residentBytes == 2560 * 4096)
        #expect(ProcessSample.parse(stat: "garbage", statm: "", ticksPerSecond: 100, pageSize: 4096) == nil)
    }

    @Test func samplesThisProcess() throws {
        let a = try #require(ProcessSample.now())
        var x = 0.0
        for i in 0..<3_000_000 { x += Double(i).squareRoot() }
        let b = try #require(ProcessSample.now())
        #expect(x > 0 && b.cpuSeconds >= a.cpuSeconds && b.residentBytes > 1 << 20 && b.threads >= 1)
    }
}
