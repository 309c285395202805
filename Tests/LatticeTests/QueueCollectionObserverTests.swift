import Foundation
import Synchronization
import XCTest
@testable import Lattice

final class QueueShelf: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var books: List<QueueBook>
    @Persisted var labels: MutableSet<String>
    @Persisted var counts: Map<String, Int>
}

final class QueueBook: Object {
    @Persisted var title = ""
    @Persisted var pages = 0
    @Persisted(originProperty: "books") var shelves: LinkingObjects<QueueShelf>
}

/// Lists, sets, maps and linking objects observed on a dispatch queue, as Realm's can be: the queue's
/// own handle delivers the initial value, then each commit's changes, with the collection read there.
final class QueueCollectionObserverTests: XCTestCase {
    private let types: [Object.Type] = [QueueShelf.self, QueueBook.self]

    /// Waits (up to 20 s) until `seen` holds `count` entries.
    private func wait(for seen: Locked<[String]>, count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(20)
        while seen.withLock({ $0.count }) < count && Date() < deadline { usleep(2_000) }
        XCTAssertEqual(seen.withLock { $0.count }, count, "deliveries \(seen.withLock { $0 })", file: file, line: line)
    }

    func testEveryCollectionKindObservedOnAQueue() throws {
        let db = makeTempDatabase("queue-collections")
        let lattice = try db.open(types)
        let book = try lattice.write { () -> QueueBook in
            let shelf = try lattice.create(QueueShelf.self, value: ["id": 1])
            let book = try lattice.create(QueueBook.self, value: ["title": "a"])
            shelf.books.append(book)
            shelf.labels.insert("x")
            shelf.counts["x"] = 1
            return book
        }
        let shelf = try XCTUnwrap(lattice.object(ofType: QueueShelf.self, forPrimaryKey: 1))
        let queue = DispatchQueue(label: "collections")
        let lists = Locked<[String]>([]), sets = Locked<[String]>([]), maps = Locked<[String]>([]), linking = Locked<[String]>([])
        let tokens = [
            shelf.books.observe(keyPaths: ["pages"], on: queue) { change in
                dispatchPrecondition(condition: .onQueue(queue))
                switch change {
                case .initial(let list): lists.withLock { $0.append("initial \(list.map(\.title))") }
                case let .update(list, d, i, m): lists.withLock { $0.append("\(list.map(\.title)) -\(d) +\(i) ~\(m)") }
                case .error(let error): lists.withLock { $0.append("error \(error)") }
                }
            },
            shelf.labels.observe(on: queue) { change in
                switch change {
                case .initial(let set): sets.withLock { $0.append("initial \(Array(set))") }
                case let .update(set, _, i, _): sets.withLock { $0.append("\(Array(set).sorted()) +\(i.count)") }
                case .error(let error): sets.withLock { $0.append("error \(error)") }
                }
            },
            shelf.counts.observe(on: queue) { change in
                switch change {
                case .initial(let map): maps.withLock { $0.append("initial \(map.count)") }
                case let .update(_, d, i, m): maps.withLock { $0.append("-\(d) +\(i) ~\(m)") }
                case .error(let error): maps.withLock { $0.append("error \(error)") }
                }
            },
            book.shelves.observe(on: queue) { change in
                switch change {
                case .initial(let shelves): linking.withLock { $0.append("initial \(shelves.map(\.id))") }
                case let .update(shelves, _, i, m): linking.withLock { $0.append("\(shelves.map(\.id)) +\(i) ~\(m)") }
                case .error(let error): linking.withLock { $0.append("error \(error)") }
                }
            },
        ]
        for seen in [lists, sets, maps, linking] { wait(for: seen, count: 1) }
        try lattice.write {
            shelf.books.append(try lattice.create(QueueBook.self, value: ["title": "b"]))
            shelf.labels.insert("y")
            shelf.counts["y"] = 2
            let other = try lattice.create(QueueShelf.self, value: ["id": 2])
            other.books.append(book)
        }
        for seen in [lists, sets, maps, linking] { wait(for: seen, count: 2) }
        try lattice.write { book.pages = 10 }  // watched through the list's key path
        // Both shelves link to the book: without key paths, they are modified (shelf 1 also by its new book).
        for seen in [lists, linking] { wait(for: seen, count: 3) }
        XCTAssertEqual(lists.withLock { $0 }, ["initial [\"a\"]", "[\"a\", \"b\"] -[] +[1] ~[]", "[\"a\", \"b\"] -[] +[] ~[0]"])
        XCTAssertEqual(sets.withLock { $0 }, ["initial [\"x\"]", "[\"x\", \"y\"] +1"])
        XCTAssertEqual(maps.withLock { $0 }, ["initial 1", "-[] +[\"y\"] ~[]"])
        XCTAssertEqual(linking.withLock { $0 }, ["initial [1]", "[1, 2] +[1] ~[0]", "[1, 2] +[] ~[0, 1]"])
        tokens.forEach { $0.invalidate() }

        // A key path the element class does not have is refused at once, as without a queue.
        let refused = Locked<[String]>([])
        _ = shelf.books.observe(keyPaths: ["nmae"], on: queue) { change in
            if case .error(let error) = change { refused.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(refused.withLock { $0.count }, 1)
    }
}
