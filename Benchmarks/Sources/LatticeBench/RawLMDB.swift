import CLMDBBench
import Foundation

/// The floor: LMDB through its C API with WORKLOAD.md's record layout and settings.
///
/// person: key = 8-byte big-endian id with the sign bit flipped; value (64 bytes) =
/// `[i64 age][f64 score][f64 created][u16 nameLen][u16 emailLen][name][email]`.
/// idx_age (DUPSORT|DUPFIXED): key = 8-byte order-preserving age, value = 8-byte order-preserving id.
final class RawLMDB {
    let dir: String
    private var env: OpaquePointer?
    private var person: MDB_dbi = 0
    private var index: MDB_dbi = 0

    init(dir: String) {
        self.dir = dir
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        check(mdb_env_create(&env))
        check(mdb_env_set_mapsize(env, 1 << 30))
        check(mdb_env_set_maxdbs(env, 4))
        check(mdb_env_open(env, dir, 0, 0o644))   // flags 0: durable commits
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn))
        check(mdb_dbi_open(txn, "person", UInt32(MDB_CREATE), &person))
        check(mdb_dbi_open(txn, "idx_age", UInt32(MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED), &index))
        check(mdb_txn_commit(txn))
    }

    func close() { mdb_env_close(env) }

    var dataFile: String { dir + "/data.mdb" }

    // MARK: Encoding

    @inline(__always)
    static func key(_ v: Int64) -> UInt64 { (UInt64(bitPattern: v) ^ (1 << 63)).bigEndian }
    @inline(__always)
    static func id(_ raw: UnsafeMutableRawPointer) -> Int64 {
        Int64(bitPattern: UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)) ^ (1 << 63))
    }

    private static func encode(_ p: Person, into buf: UnsafeMutableRawPointer) -> Int {
        buf.storeBytes(of: Int64(p.age), toByteOffset: 0, as: Int64.self)
        buf.storeBytes(of: p.score, toByteOffset: 8, as: Double.self)
        buf.storeBytes(of: p.created.timeIntervalSince1970, toByteOffset: 16, as: Double.self)
        var name = p.name
        var email = p.email
        let nameLen = name.withUTF8 { u -> Int in
            (buf + 28).copyMemory(from: u.baseAddress!, byteCount: u.count); return u.count
        }
        let emailLen = email.withUTF8 { u -> Int in
            (buf + 28 + nameLen).copyMemory(from: u.baseAddress!, byteCount: u.count); return u.count
        }
        buf.storeBytes(of: UInt16(nameLen), toByteOffset: 24, as: UInt16.self)
        buf.storeBytes(of: UInt16(emailLen), toByteOffset: 26, as: UInt16.self)
        return 28 + nameLen + emailLen
    }

    /// The C analogue of the decoded struct: numbers plus one malloc holding both strings.
    struct Decoded {
        var id: Int64
        var age: Int64
        var score: Double
        var created: Double
        var strings: UnsafeMutableRawPointer
        var nameLen: Int
        var emailLen: Int
        func free() { Foundation.free(strings) }
    }

    @inline(__always)
    private static func decode(id: Int64, _ v: MDB_val) -> Decoded {
        let p = v.mv_data!
        let nameLen = Int(p.loadUnaligned(fromByteOffset: 24, as: UInt16.self))
        let emailLen = Int(p.loadUnaligned(fromByteOffset: 26, as: UInt16.self))
        let strings = malloc(nameLen + emailLen)!
        strings.copyMemory(from: p + 28, byteCount: nameLen + emailLen)
        return Decoded(id: id, age: p.loadUnaligned(fromByteOffset: 0, as: Int64.self),
                       score: p.loadUnaligned(fromByteOffset: 8, as: Double.self),
                       created: p.loadUnaligned(fromByteOffset: 16, as: Double.self),
                       strings: strings, nameLen: nameLen, emailLen: emailLen)
    }

    // MARK: Steps

    /// Step 1 (flags MDB_NOOVERWRITE) or 1b (MDB_APPEND on the main DB).
    @inline(never)  // a separate symbol per step for profiles
    func insert(_ people: ArraySlice<Person>, append: Bool = false) {
        write { txn in for p in people { put(txn, p, append: append) } }
    }

    private func put(_ txn: OpaquePointer?, _ p: Person, append: Bool) {
        var buf: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &buf) { b in
            let len = Self.encode(p, into: b.baseAddress!)
            var k = Self.key(p.id)
            var ak = Self.key(Int64(p.age))
            withUnsafeMutableBytes(of: &k) { kb in
                var key = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                var val = MDB_val(mv_size: len, mv_data: b.baseAddress)
                check(mdb_put(txn, person, &key, &val, UInt32(append ? MDB_APPEND : MDB_NOOVERWRITE)))
                withUnsafeMutableBytes(of: &ak) { akb in
                    var ikey = MDB_val(mv_size: 8, mv_data: akb.baseAddress)
                    var ival = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    check(mdb_put(txn, index, &ikey, &ival, 0))
                }
            }
        }
    }

    /// Step 2: one durable transaction per object; `flags` = env flags for 2b/2c.
    @inline(never)  // a separate symbol per step for profiles
    func insertSmall(_ people: ArraySlice<Person>, envFlags: Int32) {
        if envFlags != 0 { check(mdb_env_set_flags(env, UInt32(envFlags), 1)) }
        for p in people { write { txn in put(txn, p, append: false) } }
        if envFlags != 0 { check(mdb_env_set_flags(env, UInt32(envFlags), 0)) }
    }

    /// Step 3: returns sum(age + name[0]).
    @inline(never)  // a separate symbol per step for profiles
    func getByID(_ ids: [Int64]) -> Int {
        read { txn in
            var sum = 0
            for id in ids {
                var k = Self.key(id)
                let d: Decoded = withUnsafeMutableBytes(of: &k) { kb in
                    var key = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    check(mdb_get(txn, person, &key, &val))
                    return Self.decode(id: id, val)
                }
                sum += Int(d.age) + Int(d.strings.load(as: UInt8.self))
                d.free()
            }
            return sum
        }
    }

    /// Step 4: (n, sum(score)).
    @inline(never)  // a separate symbol per step for profiles
    func scanAll() -> (Int, Double) {
        read { txn in
            var out: [Decoded] = []
            var stat = MDB_stat()
            check(mdb_stat(txn, person, &stat))
            out.reserveCapacity(stat.ms_entries)
            var cursor: OpaquePointer?
            check(mdb_cursor_open(txn, person, &cursor))
            var key = MDB_val()
            var val = MDB_val()
            var rc = mdb_cursor_get(cursor, &key, &val, MDB_FIRST)
            while rc == 0 {
                out.append(Self.decode(id: Self.id(key.mv_data), val))
                rc = mdb_cursor_get(cursor, &key, &val, MDB_NEXT)
            }
            mdb_cursor_close(cursor)
            var sum = 0.0
            for d in out { sum += d.score; d.free() }
            return (out.count, sum)
        }
    }

    /// Decodes the objects whose age is in `ages` through the index, in index order.
    private func byAge(_ txn: OpaquePointer?, _ ages: Range<Int>) -> [Decoded] {
        var out: [Decoded] = []
        var cursor: OpaquePointer?
        check(mdb_cursor_open(txn, index, &cursor))
        var start = Self.key(Int64(ages.lowerBound))
        let end = UInt64(bitPattern: Int64(ages.upperBound)) ^ (1 << 63)
        withUnsafeMutableBytes(of: &start) { sb in
            var key = MDB_val(mv_size: 8, mv_data: sb.baseAddress)
            var val = MDB_val()
            var rc = mdb_cursor_get(cursor, &key, &val, MDB_SET_RANGE)
            while rc == 0 {
                if UInt64(bigEndian: key.mv_data.loadUnaligned(as: UInt64.self)) >= end { break }
                var pval = MDB_val()
                var pkey = val
                check(mdb_get(txn, person, &pkey, &pval))
                out.append(Self.decode(id: Self.id(val.mv_data), pval))
                rc = mdb_cursor_get(cursor, &key, &val, MDB_NEXT)
            }
        }
        mdb_cursor_close(cursor)
        return out
    }

    /// Step 5 (one repetition): (n, sum(score)).
    @inline(never)  // a separate symbol per step for profiles
    func queryIndexed() -> (Int, Double) {
        read { txn in
            let out = byAge(txn, 42..<43)
            var sum = 0.0
            for d in out { sum += d.score; d.free() }
            return (out.count, sum)
        }
    }

    /// Step 6 (one repetition): (count, n, sum(score)).
    @inline(never)  // a separate symbol per step for profiles
    func queryRange() -> (Int, Int, Double) {
        read { txn in
            var count = 0
            var cursor: OpaquePointer?
            check(mdb_cursor_open(txn, index, &cursor))
            for age in 20..<30 {
                var k = Self.key(Int64(age))
                withUnsafeMutableBytes(of: &k) { kb in
                    var key = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    if mdb_cursor_get(cursor, &key, &val, MDB_SET_KEY) == 0 {
                        var n = 0
                        check(mdb_cursor_count(cursor, &n))
                        count += n
                    }
                }
            }
            mdb_cursor_close(cursor)
            let out = byAge(txn, 20..<30)
            var sum = 0.0
            for d in out { sum += d.score; d.free() }
            return (count, out.count, sum)
        }
    }

    /// Step 7: score += 1 (read, modify, write back).
    @inline(never)  // a separate symbol per step for profiles
    func update(_ ids: [Int64]) {
        write { txn in
            var buf = [UInt8](repeating: 0, count: 256)
            for id in ids {
                var k = Self.key(id)
                withUnsafeMutableBytes(of: &k) { kb in
                    var key = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    check(mdb_get(txn, person, &key, &val))
                    buf.withUnsafeMutableBytes { b in
                        b.baseAddress!.copyMemory(from: val.mv_data, byteCount: val.mv_size)
                        let score = b.load(fromByteOffset: 8, as: Double.self)
                        b.storeBytes(of: score + 1.0, toByteOffset: 8, as: Double.self)
                        var nval = MDB_val(mv_size: val.mv_size, mv_data: b.baseAddress)
                        check(mdb_put(txn, person, &key, &nval, 0))
                    }
                }
            }
        }
    }

    /// Step 8: deletes the objects and their index entries.
    @inline(never)  // a separate symbol per step for profiles
    func delete(_ ids: [Int64]) {
        write { txn in
            for id in ids {
                var k = Self.key(id)
                withUnsafeMutableBytes(of: &k) { kb in
                    var key = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    check(mdb_get(txn, person, &key, &val))
                    var ak = Self.key(val.mv_data.loadUnaligned(as: Int64.self))
                    withUnsafeMutableBytes(of: &ak) { akb in
                        var ikey = MDB_val(mv_size: 8, mv_data: akb.baseAddress)
                        var ival = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                        check(mdb_del(txn, index, &ikey, &ival))
                    }
                    check(mdb_del(txn, person, &key, nil))
                }
            }
        }
    }

    func count() -> Int {
        read { txn in
            var stat = MDB_stat()
            check(mdb_stat(txn, person, &stat))
            return stat.ms_entries
        }
    }

    /// Cold start helper: the record of `id` decoded, from an environment just opened.
    func firstRead(_ id: Int64) -> Int {
        let ids = [id]
        return getByID(ids)
    }

    // MARK: Transactions

    private func write(_ body: (OpaquePointer?) -> Void) {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn))
        body(txn)
        check(mdb_txn_commit(txn))
    }

    private func read<R>(_ body: (OpaquePointer?) -> R) -> R {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        return body(txn)
    }
}

/// LMDB failures stop the benchmark: they mean the harness is wrong.
@inline(__always)
func check(_ rc: Int32, file: StaticString = #file, line: UInt = #line) {
    if rc != 0 { fatalError("LMDB error \(rc): \(String(cString: mdb_strerror(rc)))", file: file, line: line) }
}
