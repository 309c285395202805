import Foundation
import XCTest
@testable import Lattice

/// `contains(_:)` and `firstIndex(of:)` of collections of objects search keys instead of comparing every
/// object; they must answer exactly as comparing every object with `==` does.
final class MembershipTests: XCTestCase {
    final class Player: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var score = 0
        @Persisted var team: Team?
    }

    final class Team: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var roster: List<Player>
        @Persisted(originProperty: "team") var players: LinkingObjects<Player>
    }

    private var config: Lattice.Configuration!

    override func setUp() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("membership-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [Player.self, Team.self])
    }

    override func tearDown() {
        _ = try? Lattice.deleteFiles(for: config)
    }

    /// Answers as the standard library's element-by-element search does.
    private func assertSameAnswers<C: Collection>(_ collection: C, _ probes: [C.Element], file: StaticString = #filePath, line: UInt = #line)
    where C.Element: Equatable {
        let all = Array(collection)
        for probe in probes {
            XCTAssertEqual(collection.contains(probe), all.contains(probe), file: file, line: line)
            XCTAssertEqual(collection.firstIndex(of: probe).map { collection.distance(from: collection.startIndex, to: $0) },
                           all.firstIndex(of: probe), file: file, line: line)
        }
    }

    func testContainsAndFirstIndexOfObjectsAnswerAsComparingEveryObject() throws {
        let lattice = try Lattice(configuration: config)
        let team = Team()
        team.id = 1
        try lattice.write {
            try lattice.add(team)
            for i in 0..<200 {
                let player = Player()
                player.id = i
                player.score = (i * 37) % 101
                player.team = i % 2 == 0 ? team : nil
                try lattice.add(player)
                if i % 3 == 0 { team.roster.append(player) }
            }
            // The same object twice in a list: the first position counts.
            team.roster.append(try XCTUnwrap(lattice.object(ofType: Player.self, forPrimaryKey: 3)))
        }
        let other = try Lattice(configuration: config)
        let unmanaged = Player()
        unmanaged.id = 3
        var probes = [0, 3, 4, 99, 150, 199].compactMap { lattice.object(ofType: Player.self, forPrimaryKey: $0) }
        probes += [0, 3, 99].compactMap { other.object(ofType: Player.self, forPrimaryKey: $0) }  // another handle
        probes.append(unmanaged)
        let deleted = try XCTUnwrap(lattice.object(ofType: Player.self, forPrimaryKey: 198))
        try lattice.write { try lattice.delete(deleted) }
        probes.append(deleted)

        let all = lattice.objects(Player.self)
        assertSameAnswers(all, probes)
        assertSameAnswers(try all.filter("score > 50"), probes)
        assertSameAnswers(try all.sorted(byKeyPath: "score", ascending: false), probes)
        assertSameAnswers(team.roster, probes)
        assertSameAnswers(try team.roster.filter("score < 70"), probes)
        assertSameAnswers(team.players, probes)
        assertSameAnswers(all.freeze(), probes)

        XCTAssertTrue(all.contains(probes[1]))
        XCTAssertFalse(all.contains(unmanaged))
        XCTAssertFalse(all.contains(deleted))
        XCTAssertEqual(team.roster.firstIndex(of: probes[1]), 1)
        XCTAssertTrue(team.players.contains(probes[0]))
        XCTAssertFalse(team.players.contains(probes[1]))
    }
}
