import Foundation
import XCTest
@testable import Lattice

/// Mutated relationship predicates, bound to a schema with links, never crash: each either runs or
/// throws `invalidQuery`.
final class QueryLinkFuzzTests: LinkQueryTestCase {
    func testFuzzedLinkPredicatesNeverCrash() throws {
        let (ann, _, _) = try makeSample()
        let rex = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Rex'").first)
        var rng = SplitMix64(state: 99)
        let seeds = ["owner.name == 'Ann'", "ANY dogs.age < 2", "ALL dogs.owner.address.city == 'Rome'", "NONE nicknames BEGINSWITH 'a'",
                     "dogs.@count > 2", "dogs.@avg.age > 3", "scores.@max > 5", "ratings.@sum == 10", "cars.@count == 0",
                     "SUBQUERY(dogs, $d, $d.age < 2 AND $d.name BEGINSWITH 'R').@count > 0",
                     "SUBQUERY(dogs, $d, SUBQUERY($d.walkers, $w, $w.age > 1).@count > 0).@count > 0",
                     "partner == %@", "%@ IN dogs", "'a' IN nicknames", "partner.partner.age BETWEEN {1, 40}", "address.zip == nil",
                     "ANY pets.name == 'Rex'", "friends.@min.weight < 3", "ANY optInts == nil", "tags.@count == 1"]
        let alphabet = Array("abcdgsxyz019 ._-*?%@$&|!=<>(){},'\"@") + ["AND", "OR", "NOT", "ANY", "ALL", "SUBQUERY", "@count", "@avg", "$d",
                                                                           "dogs", "owner", "walkers", "nicknames", "%@", "nil"].flatMap { Array($0) }
        let argumentSets: [[Any]] = [[], [ann], [rex], [1], ["x"], [[ann, rex]], [NSNull()], [LPerson()]]
        var failures = 0, ran = 0
        for i in 0..<4000 {
            var text = Array(seeds[i % seeds.count])
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                let at = Int.random(in: 0...text.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0 where at < text.count: text.remove(at: at)
                case 1: text.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: at)
                default: if at < text.count { text[at] = alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
                }
            }
            let args = argumentSets[Int.random(in: 0..<argumentSets.count, using: &rng)]
            for results in [AnyCollectionQuery.people(lattice), .dogs(lattice), .list(ann)] {
                do {
                    _ = try results.run(String(text), args)
                    ran += 1
                } catch let error as LatticeError {
                    guard case .invalidQuery = error else { return XCTFail("\(String(text)): \(error)") }
                    failures += 1
                } catch {
                    XCTFail("\(String(text)): unexpected \(error)")
                }
            }
        }
        XCTAssertGreaterThan(failures, 1000)
        XCTAssertGreaterThan(ran, 1000)
    }

    /// The queries the fuzz test runs each predicate on.
    enum AnyCollectionQuery {
        case people(Lattice), dogs(Lattice), list(LPerson)

        func run(_ text: String, _ args: [Any]) throws -> Int {
            switch self {
            case let .people(l): let r = try l.objects(LPerson.self).filter(text, argumentArray: args); return r.count + (r.first == nil ? 0 : 1)
            case let .dogs(l): let r = try l.objects(LDog.self).filter(text, argumentArray: args); return r.count + (r.first == nil ? 0 : 1)
            case let .list(p): return try p.dogs.filter(text, argumentArray: args).count
            }
        }
    }
}
