import CLMDBBench
import Foundation

/// Runs one round of the workload per engine; every step's result feeds the round's checksums.
struct RoundRunner {
    let data: WorkloadData
    let base: String
    let keepFiles: Bool
    /// Repetitions of steps 5 and 6 (100 and 10; `--profile` runs each once).
    var queryReps = (100, 10)

    func dir(_ engine: String, _ round: Int) -> String { "\(base)/r\(round)-\(engine)" }

    func runLMDB(_ s: Series, round: Int) -> Checksums {
        let path = dir("lmdb", round)
        resetPeakRSS()
        var c = Checksums()
        let db = RawLMDB(dir: path)
        s.record(.insert, timed { db.insert(data.main) }.0)
        s.recordSize("after step 1", fileSize(db.dataFile))
        let (tGet, sum) = timed { db.getByID(data.lookupIDs) }
        s.record(.get, tGet); c.getSum = sum
        let (tScan, scan) = timed { db.scanAll() }
        s.record(.scan, tScan); (c.scanN, c.scanSum) = scan
        let (tIdx, idx) = timed { (0..<queryReps.0).map { _ in db.queryIndexed() }.first! }
        s.record(.queryIndexed, tIdx); (c.qidxN, c.qidxSum) = idx
        let (tRange, range) = timed { (0..<queryReps.1).map { _ in db.queryRange() }.first! }
        s.record(.queryRange, tRange); (c.qrangeCount, c.qrangeN, c.qrangeSum) = range
        s.record(.update, timed { db.update(data.updateIDs) }.0)
        s.record(.delete, timed { db.delete(data.deleteIDs) }.0)
        s.record(.insertSmall, timed { db.insertSmall(data.small(0), envFlags: 0) }.0)
        s.record(.insertSmallB, timed { db.insertSmall(data.small(1), envFlags: MDB_NOMETASYNC) }.0)
        s.record(.insertSmallC, timed { db.insertSmall(data.small(2), envFlags: MDB_NOSYNC) }.0)
        c.finalCount = db.count()
        db.close()
        s.peakRSSKB.append(peakRSSKB())
        // 1b: MDB_APPEND on the main DB, into its own fresh environment.
        let appendPath = path + "-append"
        let appendDB = RawLMDB(dir: appendPath)
        s.record(.insertAppend, timed { appendDB.insert(data.main, append: true) }.0)
        s.recordSize("after step 1b (MDB_APPEND)", fileSize(appendDB.dataFile))
        appendDB.close()
        try? FileManager.default.removeItem(atPath: appendPath)
        if !keepFiles { try? FileManager.default.removeItem(atPath: path) }
        return c
    }

    func runGRDB<R: BenchRecord>(_ s: Series, _ type: R.Type, round: Int, cachedRows: Bool) throws -> Checksums {
        let path = dir(s.name, round) + ".sqlite"
        resetPeakRSS()
        var c = Checksums()
        var db: GRDBEngine<R>? = try GRDBEngine<R>(path: path)
        let g = db!
        if round == 1 { s.notes[.insert] = try g.settings() }
        s.record(.insert, try timed { try g.insert(data.main) }.0)
        s.recordSize("after step 1 (db+wal, before checkpoint)", fileSize(path) + fileSize(path + "-wal"))
        try g.checkpoint()
        s.recordSize("after step 1", fileSize(path))
        let (tGet, sum) = try timed { try g.getByID(data.lookupIDs) }
        s.record(.get, tGet); c.getSum = sum
        if cachedRows {
            let (t, sum2) = try timed { try g.getByIDCached(data.lookupIDs) }
            s.record(.getCached, t)
            precondition(sum2 == sum, "3b checksum differs from 3")
        }
        let (tScan, scan) = try timed { try g.scanAll() }
        s.record(.scan, tScan); (c.scanN, c.scanSum) = scan
        let (tIdx, idx) = try timed { try (0..<queryReps.0).map { _ in try g.queryIndexed() }.first! }
        s.record(.queryIndexed, tIdx); (c.qidxN, c.qidxSum) = idx
        let (tRange, range) = try timed { try (0..<queryReps.1).map { _ in try g.queryRange() }.first! }
        s.record(.queryRange, tRange); (c.qrangeCount, c.qrangeN, c.qrangeSum) = range
        s.record(.update, try timed { try g.update(data.updateIDs) }.0)
        if cachedRows { s.record(.updateCached, try timed { try g.updateCached(data.updateIDs) }.0) }
        s.record(.delete, try timed { try g.delete(data.deleteIDs) }.0)
        s.record(.insertSmall, try timed { try g.insertSmall(data.small(0), synchronous: "NORMAL") }.0)
        s.record(.insertSmallFull, try timed { try g.insertSmall(data.small(1), synchronous: "FULL") }.0)
        s.record(.insertSmallC, try timed { try g.insertSmall(data.small(2), synchronous: "OFF") }.0)
        c.finalCount = try g.count()
        db = nil
        s.peakRSSKB.append(peakRSSKB())
        if !keepFiles { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        return c
    }

    /// Lattice's round; `encrypted`: on an encrypted file (the `lattice-encrypted` engine). With `observed`,
    /// an observer of every person is registered first on this thread's run loop, which does not run
    /// during the steps: the writes pay what observers cost a writer (the change log and the wake-up),
    /// not the observer's own work.
    func runLattice(_ s: Series, round: Int, encrypted: Bool = false, observed: Bool = false) throws -> Checksums {
        let path = dir(encrypted ? "lattice-encrypted" : observed ? "lattice-observed" : "lattice", round) + ".lattice"
        resetPeakRSS()
        var c = Checksums()
        let db = try LatticeEngine(path: path, encryptionKey: encrypted ? LatticeEngine.benchmarkKey : nil)
        let token = observed ? db.lattice?.objects(PersonObject.self).observe { _ in } : nil
        defer { token?.invalidate() }
        s.record(.insert, try timed { try db.insert(data.main) }.0)
        s.recordSize("after step 1", fileSize(path))
        // For looking inside the file after step 1 (for example with LMDB's `mdb_stat`): a copy of it.
        if let copy = ProcessInfo.processInfo.environment["LATTICE_BENCH_KEEP_STEP1"], round == 1, !encrypted, !observed {
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
        }
        let (tGet, sum) = timed { db.getByID(data.lookupIDs) }
        s.record(.get, tGet); c.getSum = sum
        let (tScan, scan) = timed { db.scanAll() }
        s.record(.scan, tScan); (c.scanN, c.scanSum) = scan
        let (tIdx, idx) = try timed { try (0..<queryReps.0).map { _ in try db.queryIndexed() }.first! }
        s.record(.queryIndexed, tIdx); (c.qidxN, c.qidxSum) = idx
        let (tRange, range) = try timed { try (0..<queryReps.1).map { _ in try db.queryRange() }.first! }
        s.record(.queryRange, tRange); (c.qrangeCount, c.qrangeN, c.qrangeSum) = range
        s.record(.update, try timed { try db.update(data.updateIDs) }.0)
        s.record(.delete, try timed { try db.delete(data.deleteIDs) }.0)
        s.record(.insertSmall, try timed { try db.insertSmall(data.small(0)) }.0)
        // Lattice has no weaker-sync option: 2b and 2c run durable, to reach the same final count.
        s.record(.insertSmallB, try timed { try db.insertSmall(data.small(1)) }.0)
        s.record(.insertSmallC, try timed { try db.insertSmall(data.small(2)) }.0)
        s.notes[.insertSmallB] = "durable (Lattice has no weaker-sync option)"
        s.notes[.insertSmallC] = "durable (Lattice has no weaker-sync option)"
        c.finalCount = db.count()
        db.close()
        s.peakRSSKB.append(peakRSSKB())
        if !keepFiles { for suffix in ["", "-lock"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        return c
    }
}
