import Foundation
import Synchronization
import XCTest
@testable import Lattice

final class GrowthItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var payload = ""
    @Persisted var tags: List<String>
}

/// Growing the map while other threads of the process read through their own handles, refreshing all the
/// time: growth waits for their snapshots to end (never re-mapping under one) and new snapshots wait for
/// the growth, so neither starves and every snapshot reads whole data.
final class MapGrowthConcurrencyTests: XCTestCase {
    func testReadersOnOtherThreadsSurviveGrowth() throws {
        let db = makeTempDatabase("growth")
        let config = {
            var config = db.configuration([GrowthItem.self], initialMapSize: 64 << 10)
            // Scans drop their pages from the resident set every few pages, so that also overlaps growth.
            config.residentScanBytes = 8 << 10
            return config
        }()
        do {
            let seed = try Lattice(configuration: config)
            try seed.write {
                for i in 0..<50 {
                    let item = GrowthItem(); item.id = i; item.payload = String(repeating: "s", count: 100)
                    item.tags.append(contentsOf: ["a", "b"])
                    try seed.add(item)
                }
            }
        }
        let stop = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        let readersStarted = DispatchSemaphore(value: 0)
        for reader in 0..<2 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let lattice = try Lattice(configuration: config)
                    var firstRead = true
                    while !stop.load(ordering: .relaxed) {
                        // Every snapshot must be whole: the 50 seed items with intact values and lists.
                        lattice.refresh()
                        let items = lattice.objects(GrowthItem.self)
                        for i in stride(from: reader, to: 50, by: 7) {
                            guard let item = lattice.object(ofType: GrowthItem.self, forPrimaryKey: i),
                                  item.payload.count == 100, Array(item.tags) == ["a", "b"] else {
                                failures.withLock { $0.append("item \(i) damaged") }
                                return
                            }
                        }
                        if items.count < 50 { failures.withLock { $0.append("count \(items.count)") } }
                        for item in items where item.payload.count != 100 && item.payload.count != 3000 {
                            failures.withLock { $0.append("item \(item.id) scanned damaged") }
                        }
                        reads.add(1, ordering: .relaxed)
                        if firstRead {
                            firstRead = false
                            readersStarted.signal()
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        // Grow only once both readers are reading, so growth always overlaps their reads.
        XCTAssertEqual(readersStarted.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(readersStarted.wait(timeout: .now() + 60), .success)
        let writer = try Lattice(configuration: config)
        let before = writer.env.mapSize
        for round in 0..<8 {
            try writer.write {
                for i in 0..<400 {
                    let item = GrowthItem(); item.id = 1000 + round * 400 + i
                    item.payload = String(repeating: "w", count: 3000)
                    try writer.add(item)
                }
            }
        }
        stop.store(true, ordering: .relaxed)
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "readers finished")
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertGreaterThan(reads.load(ordering: .relaxed), 0)
        XCTAssertGreaterThan(writer.env.mapSize, before * 64, "the map grew many times meanwhile")
        XCTAssertEqual(writer.objects(GrowthItem.self).count, 50 + 8 * 400)
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(reopened.objects(GrowthItem.self).count, 50 + 8 * 400)
        XCTAssertEqual(reopened.object(ofType: GrowthItem.self, forPrimaryKey: 1000 + 7 * 400 + 399)?.payload.count, 3000)
    }
}
