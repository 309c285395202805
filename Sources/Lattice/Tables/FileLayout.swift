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
            for p in cls.properties {
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

    /// Index keys longer than this are truncated; equality lookups then verify candidates.
    static let maxIndexKey = 480

    /// The case-folded index of an indexed String property: same shape as `index`, keyed by the folded string.
    static func foldedIndex(_ className: String, _ property: String) -> String { "f:\(className).\(property)" }

    /// Current file format version (meta key `format`).
    static let formatVersion: UInt32 = 1
}
