import Foundation

/// Names of the tables (LMDB databases) inside a Lattice file (see the *File Format* article).
enum FileLayout {
    static let meta = "meta"
    /// The per-commit change log notifications read (`ChangeLog`). Files written before it existed
    /// get it at their first read-write open; a read-only handle works without it.
    static let changes = "changes"
    static func objects(_ className: String) -> String { "o:" + className }
    static func index(_ className: String, _ property: String) -> String { "i:\(className).\(property)" }
    static func backlinks(_ className: String) -> String { "b:" + className }
    static func collection(_ kind: CollectionKind, _ className: String, _ property: String) -> String {
        switch kind {
        case .list: return "l:\(className).\(property)"
        case .set: return "s:\(className).\(property)"
        case .map: return "m:\(className).\(property)"
        }
    }

    /// The 32-bit id of a link property in backlink entries: FNV-1a of `Class.property`.
    static func linkID(_ className: String, _ property: String) -> UInt32 {
        KeyCodec.fnv1a32("\(className).\(property)")
    }

    /// Every database a schema needs, with whether it holds sorted duplicates.
    static func databases(for schema: Schema) -> [(name: String, dupSort: Bool)] {
        var out: [(String, Bool)] = [(meta, false), (changes, false)]
        var targets = Set<String>()
        for cls in schema.objectSchemas {
            out.append((objects(cls.className), false))
            for p in cls.allProperties {
                if let kind = p.collection { out.append((collection(kind, cls.className, p.name), false)) }
                if p.type == .object, let target = p.objectClassName { targets.insert(target) }
                guard p.isIndexed, !(p.isPrimaryKey && p.type.isInteger && !p.isOptional) else { continue }
                out.append((index(cls.className, p.name), true))
                if p.type == .string && p.collection == nil { out.append((foldedIndex(cls.className, p.name), true)) }
            }
        }
        for target in targets.sorted() { out.append((backlinks(target), true)) }
        return out
    }

    /// Whether the database `name` holds sorted duplicates (indexes and backlinks).
    static func isDupSort(_ name: String) -> Bool {
        name.hasPrefix("i:") || name.hasPrefix("f:") || name.hasPrefix("b:")
    }

    /// Index keys longer than this are truncated; equality lookups then verify candidates.
    static let maxIndexKey = 480

    /// The case-folded index of an indexed String property: same shape as `index`, keyed by the folded string.
    static func foldedIndex(_ className: String, _ property: String) -> String { "f:\(className).\(property)" }

    /// Current file format version (meta key `format`), written in new plaintext files. Each version
    /// says whether values carry checksums (`SealedTables`), how backlinks are keyed (`BacklinkTable`) and
    /// whether object tables are packed (`Runs`):
    ///
    /// | format | checksums | backlink key | object records |
    /// | --- | --- | --- | --- |
    /// | 1 | no | target | one per LMDB entry |
    /// | 2 | yes | target | one per LMDB entry |
    /// | 3 | no | target and link property (format 1 upgraded) | one per LMDB entry |
    /// | 4 | yes | target and link property | one per LMDB entry |
    /// | 5 | encrypted (`encryptedFormat`) | target and link property | one per LMDB entry |
    /// | 6 | yes | target and link property | packed in runs |
    ///
    /// Formats 1, 2 and 4 are upgraded on the first read-write open (`FormatUpgrade`): 1 to 3, 2 to 4 and
    /// then 6.
    static let formatVersion: UInt32 = 6

    /// Whether a file of `format` seals its values with checksums.
    static func isSealed(_ format: UInt32) -> Bool { format == 2 || format == 4 || format == 6 }

    /// Whether a file of `format` packs its object tables (`Runs`).
    static func isPacked(_ format: UInt32) -> Bool { format == 6 }

    /// The format a file of `format` is upgraded to next when opened read-write; nil when it is current.
    static func upgrade(of format: UInt32) -> UInt32? {
        switch format {
        case 1: return 3
        case 2: return 4
        case 4: return 6
        default: return nil
        }
    }

    /// The meta key of the format version.
    static let formatKey = "format"
    /// The format of an encrypted file: format 4 with its sealed values encrypted (AES-256-GCM) instead
    /// of checksummed and its value-holding keys hashed (see the *Encryption* article).
    static let encryptedFormat: UInt32 = 5
    /// The newest format this version reads.
    static let newestFormat: UInt32 = 6
    /// The meta key of an encrypted file's key check (salt and an encrypted constant).
    static let keyCheckKey = "encryption"
}

/// The tables whose values end with a checksum in a file of a sealed format (2 and 4): `meta`, `changes` and the object
/// (`o:`), List (`l:`), set (`s:`) and map (`m:`) tables. Index (`i:`, `f:`) and backlink (`b:`) entries
/// carry none: they are derived from the records, and `Lattice.verify()` checks them against the records.
struct SealedTables: SealPolicy {
    func seals(_ name: String) -> Bool {
        name == FileLayout.meta || name == FileLayout.changes
            || name.hasPrefix("o:") || name.hasPrefix("l:") || name.hasPrefix("s:") || name.hasPrefix("m:")
    }

    /// In an encrypted file, the format and the key check stay readable without the key.
    func plainKeys(in name: String) -> [[UInt8]] {
        name == FileLayout.meta ? [Array(FileLayout.formatKey.utf8), Array(FileLayout.keyCheckKey.utf8)] : []
    }

    /// Object tables (`o:`) are packed into runs in a file of format 6.
    func packs(_ name: String) -> Bool { name.hasPrefix("o:") }

    /// Index tables (`i:`, `f:`) are packed into blocks in a file of format 6 (those created there).
    func packsDuplicates(_ name: String) -> Bool { name.hasPrefix("i:") || name.hasPrefix("f:") }

    /// Index (`i:`, `f:`), set (`s:`) and map (`m:`) keys are values (or map keys) of the objects.
    func hashesKeys(_ name: String) -> Bool {
        name.hasPrefix("i:") || name.hasPrefix("f:") || name.hasPrefix("s:") || name.hasPrefix("m:")
    }

    func describe(key: UnsafeRawBufferPointer, in name: String) -> String {
        SealedTables.describe(key: key, in: name)
    }

    /// A key as the message of a damaged value names it.
    static func describe(key: UnsafeRawBufferPointer, in name: String) -> String {
        if name.hasPrefix("o:") && key.count == 8 { return "object key \(KeyCodec.int(key))" }
        if name.hasPrefix("l:") && key.count == 12 {
            let chunk = UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            return chunk == 0 ? "the list directory of object key \(KeyCodec.int(key))"
                : "list chunk \(chunk) of object key \(KeyCodec.int(key))"
        }
        if (name.hasPrefix("s:") || name.hasPrefix("m:")) && key.count >= 8 {
            return "an entry of object key \(KeyCodec.int(UnsafeRawBufferPointer(rebasing: key[0..<8])))"
        }
        if name == FileLayout.meta { return "'\(String(decoding: key, as: UTF8.self))'" }
        if name == FileLayout.changes && key.count == 8 {
            return "the entry of transaction \(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))"
        }
        return "key " + key.prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
