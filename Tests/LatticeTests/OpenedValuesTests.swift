import Foundation
import XCTest
@testable import Lattice

/// The decrypted values an encrypted file keeps (`OpenedValues`): a kept value is returned only for
/// exactly the table, entry key and stored bytes it was opened from, and the budget holds.
final class OpenedValuesTests: XCTestCase {
    private static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 17) }
    }

    /// `copy` of `stored` under `key` in table `tag`, or nil when it is not kept.
    private static func copy(_ cache: OpenedValues, _ tag: UInt64, _ key: [UInt8], _ stored: [UInt8], plainCount: Int) -> [UInt8]? {
        var plain = [UInt8](repeating: 0, count: plainCount + 1)
        let found = key.withUnsafeBytes { k in
            stored.withUnsafeBytes { s in
                plain.withUnsafeMutableBytes { p in p.baseAddress.map { cache.copy(tag, key: k, stored: s, to: $0, plainCount: plainCount) } ?? false }
            }
        }
        return found ? Array(plain.prefix(plainCount)) : nil
    }

    private static func keep(_ cache: OpenedValues, _ tag: UInt64, _ key: [UInt8], _ stored: [UInt8], _ plain: [UInt8]) {
        key.withUnsafeBytes { k in stored.withUnsafeBytes { s in plain.withUnsafeBytes { cache.keep(tag, key: k, stored: s, plain: $0) } } }
    }

    private static func contains(_ cache: OpenedValues, _ tag: UInt64, _ key: [UInt8], _ stored: [UInt8]) -> Bool {
        key.withUnsafeBytes { k in stored.withUnsafeBytes { cache.contains(tag, key: k, stored: $0) } }
    }

    func testAKeptValueIsReturnedOnlyForExactlyItsTableKeyAndStoredBytes() throws {
        let cache = try XCTUnwrap(OpenedValues())
        let key = Self.bytes(8, seed: 1), stored = Self.bytes(128, seed: 2), plain = Self.bytes(100, seed: 3)
        Self.keep(cache, 7, key, stored, plain)
        XCTAssertEqual(Self.copy(cache, 7, key, stored, plainCount: 100), plain)
        XCTAssertTrue(Self.contains(cache, 7, key, stored))

        XCTAssertNil(Self.copy(cache, 8, key, stored, plainCount: 100), "another table's cipher")
        var otherKey = key
        otherKey[7] ^= 1
        XCTAssertNil(Self.copy(cache, 7, otherKey, stored, plainCount: 100), "the value moved under another key")
        XCTAssertFalse(Self.contains(cache, 7, otherKey, stored))
        for position in [0, 12, 64, 127] {
            var changed = stored
            changed[position] ^= 0x80
            XCTAssertNil(Self.copy(cache, 7, key, changed, plainCount: 100), "a changed stored byte at \(position)")
            XCTAssertFalse(Self.contains(cache, 7, key, changed))
        }
        XCTAssertNil(Self.copy(cache, 7, key, Array(stored.dropLast()), plainCount: 99), "a shorter stored value")
        XCTAssertNil(Self.copy(cache, 7, key, stored, plainCount: 99), "another plain size")
    }

    func testAnEmptyPlainValueIsKept() throws {
        let cache = try XCTUnwrap(OpenedValues())
        let key = Self.bytes(4, seed: 5), stored = Self.bytes(28, seed: 6)
        Self.keep(cache, 1, key, stored, [])
        XCTAssertEqual(Self.copy(cache, 1, key, stored, plainCount: 0), [])
    }

    func testLargeValuesAreNotKept() throws {
        let cache = try XCTUnwrap(OpenedValues())
        let key = Self.bytes(8, seed: 1), stored = Self.bytes(OpenedValues.largestValue + 1, seed: 2)
        Self.keep(cache, 1, key, stored, Self.bytes(stored.count - 28, seed: 3))
        XCTAssertNil(Self.copy(cache, 1, key, stored, plainCount: stored.count - 28))
        XCTAssertEqual(cache.keptBytes, 0)
    }

    func testTheBudgetBoundsWhatIsKept() throws {
        let budget = 20_000
        let cache = try XCTUnwrap(OpenedValues(budget: budget))
        var generator = SystemRandomNumberGenerator()
        var kept = 0
        for i in 0..<2_000 {
            // A random nonce first, as a sealed value has: entries spread over the slots.
            let stored = (0..<128).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let key = withUnsafeBytes(of: UInt64(i)) { Array($0) }
            Self.keep(cache, 3, key, stored, Self.bytes(100, seed: UInt8(truncatingIfNeeded: i)))
            XCTAssertLessThanOrEqual(cache.keptBytes, budget)
            if Self.copy(cache, 3, key, stored, plainCount: 100) == Self.bytes(100, seed: UInt8(truncatingIfNeeded: i)) { kept += 1 }
        }
        XCTAssertGreaterThan(cache.keptBytes, budget / 2, "the cache fills up to its budget")
        XCTAssertGreaterThan(kept, 0)
        XCTAssertLessThan(kept, 2_000, "entries past the budget are not kept")
    }

    func testThreadsKeepAndCopyAtOnce() throws {
        let cache = try XCTUnwrap(OpenedValues(budget: 1 << 20))
        let mismatches = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<2_000 {
                let n = (i + thread * 7) % 300
                let key = withUnsafeBytes(of: UInt64(n)) { Array($0) }
                let stored = Self.bytes(64, seed: UInt8(n % 251)) + key
                let plain = Self.bytes(36, seed: UInt8((n * 3) % 251)) + key
                Self.keep(cache, 9, key, stored, plain)
                if let found = Self.copy(cache, 9, key, stored, plainCount: plain.count), found != plain {
                    mismatches.withLock { $0 += 1 }
                }
            }
        }
        XCTAssertEqual(mismatches.withLock { $0 }, 0)
    }
}
