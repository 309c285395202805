// Commands of Tests/LatticeTests/DamagedFileTests.swift (run in a child, so that a crash or a stop
// fails one case instead of the test run):
//   damage-build <file> <owners>
//       Writes the fixture below: owners with indexed properties, links, lists, a set and a map, and pets.
//   damage-read <file>
//       Opens the file read-only and reads everything: every object and property, lists, sets, maps,
//       lookups by primary key ("objects", "lookups": read from records and collections), linking
//       objects and queries ("backlinks", "queries": found through backlink and index tables). Prints one
//       digest line per part (every line too with LATTICE_DAMAGE_FULL=1). A thrown LatticeError prints
//       "error <description>" and exits with status 3.
//   damage-list <file> <owner id>
//       Opens the file read-only and prints the code of every pet of one owner, looping over its List.
//   damage-verify <file>
//       Opens the file read-only and prints "problems <n>" (the number `verify()` lists), then each one.
//   open <file> <ro|rw>
//       Opens the file with the fixture's classes; prints "opened", or "error <description>" (status 3).
//   fill <file> <limit bytes>
//       With RLIMIT_FSIZE at `limit`, adds owners until a write fails; prints "error <description>".
//   open-as-nobody <file>
//       As user nobody (the test runs as root, which file permissions do not stop), opens the file
//       read-write; prints "opened" or "error <description>".
import Foundation
import Lattice
#if canImport(Glibc)
import Glibc
#endif

final class DamageOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0.0
    @Persisted var note: String?
    @Persisted var best: DamagePet?
    @Persisted var pets: List<DamagePet>
    @Persisted var tags: List<String>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var ratings: Map<String, Int>
}

final class DamagePet: Object {
    @Persisted(primaryKey: true) var code = ""
    @Persisted var kind = ""
    @Persisted var weight = 0.0
    @Persisted(originProperty: "pets") var keepers: LinkingObjects<DamageOwner>
    @Persisted(originProperty: "best") var fans: LinkingObjects<DamageOwner>
}

@_silgen_name("backtrace")
private func stackFrames(_ buffer: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ size: Int32) -> Int32

/// glibc's `Dl_info` (dlfcn.h declares `dladdr` only with _GNU_SOURCE, which the Glibc module lacks).
private struct ImageInfo {
    var fileName: UnsafePointer<CChar>?
    var fileBase: UnsafeMutableRawPointer?
    var symbolName: UnsafePointer<CChar>?
    var symbolAddress: UnsafeMutableRawPointer?
}

@_silgen_name("dladdr")
private func imageInfo(_ address: UnsafeRawPointer?, _ info: UnsafeMutablePointer<ImageInfo>) -> Int32

/// On SIGSEGV or SIGBUS, prints the images of the crashing frames ("crash frames: liblmdb.so.0 <- ...") to
/// stderr, so the test can tell a crash inside LMDB from one in Lattice's code, then dies of the signal.
/// (Not async-signal-safe; acceptable for a process that is dying anyway.)
func reportCrashFrames() {
    var action = sigaction()
    action.__sigaction_handler.sa_sigaction = { signal, _, _ in
        var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 24)
        let n = Int(stackFrames(&frames, 24))
        var images: [String] = []
        for frame in frames.prefix(n) {
            var info = ImageInfo()
            guard let frame, imageInfo(frame, &info) != 0, let file = info.fileName else { continue }
            let image = String(cString: file).split(separator: "/").last.map(String.init) ?? "?"
            let symbol = info.symbolName.map { String(cString: $0) } ?? ""
            images.append(image + (symbol.isEmpty ? "" : ":" + symbol))
        }
        let line = "crash frames: " + images.joined(separator: " <- ") + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        Glibc.signal(signal, SIG_DFL)
        raise(signal)
    }
    // Its own stack, so that a stack overflow is reported too.
    let size = 1 << 16
    var stack = stack_t(ss_sp: UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16), ss_flags: 0, ss_size: size)
    sigaltstack(&stack, nil)
    action.sa_flags = SA_SIGINFO | SA_ONSTACK
    sigaction(SIGSEGV, &action, nil)
    sigaction(SIGBUS, &action, nil)
}

func damageLattice(_ path: String, readOnly: Bool) throws -> Lattice {
    try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), readOnly: readOnly,
                                     objectTypes: [DamageOwner.self, DamagePet.self]))
}

/// Opens the fixture file and says so; read-only, with the number of owners it reads.
func openAndReport(_ path: String, readOnly: Bool) throws {
    let lattice = try damageLattice(path, readOnly: readOnly)
    say(readOnly ? "opened \(lattice.objects(DamageOwner.self).count) owners" : "opened")
}

/// Builds the fixture in several transactions (so the file has free pages and older page versions too).
func damageBuild(_ path: String, owners: Int) throws {
    let lattice = try damageLattice(path, readOnly: false)
    let petCount = max(1, owners / 4)
    try lattice.write {
        for i in 0..<petCount {
            let pet = DamagePet()
            pet.code = "pet-\(i)"
            pet.kind = ["cat", "dog", "fish", "owl"][i % 4]
            pet.weight = Double(i % 97) / 4
            try lattice.add(pet)
        }
    }
    let batch = 250
    for start in stride(from: 0, to: owners, by: batch) {
        try lattice.write {
            for i in start..<min(start + batch, owners) {
                let owner = DamageOwner()
                owner.id = i
                owner.name = "owner \(i % 500) \(String(repeating: "x", count: i % 23))"
                owner.age = i % 90
                owner.score = Double(i) * 1.5
                owner.note = i % 3 == 0 ? nil : "note \(i)"
                try lattice.add(owner)
                owner.best = lattice.object(ofType: DamagePet.self, forPrimaryKey: "pet-\(i % petCount)")
                for j in 0..<(i % 7) {
                    if let pet = lattice.object(ofType: DamagePet.self, forPrimaryKey: "pet-\((i + j * 13) % petCount)") {
                        owner.pets.append(pet)
                    }
                }
                // Every 50th owner has a long list (several chunks).
                let tags = i % 50 == 0 ? 700 : i % 5
                owner.tags.append(contentsOf: (0..<tags).map { "tag \(i)-\($0)" })
                for n in 0..<(i % 4) { owner.numbers.insert(i * 10 + n) }
                for n in 0..<(i % 3) { owner.ratings["r\(n)"] = i + n }
            }
        }
    }
    // Some deletes and updates leave free pages and rewritten records.
    try lattice.write {
        for i in stride(from: 7, to: owners, by: 97) {
            if let owner = lattice.object(ofType: DamageOwner.self, forPrimaryKey: i) { try lattice.delete(owner) }
        }
        for i in stride(from: 3, to: owners, by: 31) {
            lattice.object(ofType: DamageOwner.self, forPrimaryKey: i)?.score += 1
        }
    }
}

/// 64-bit FNV-1a over the lines a part of the read produces.
struct Digest {
    private(set) var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    private(set) var lines = 0
    /// LATTICE_DAMAGE_FULL=1 prints every line too (to see what differs).
    static let full = ProcessInfo.processInfo.environment["LATTICE_DAMAGE_FULL"] == "1"

    mutating func add(_ line: String) {
        if Digest.full { print(line) }
        for byte in line.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash = (hash ^ 10) &* 0x100_0000_01b3
        lines += 1
    }
}

func describeOwner(_ o: DamageOwner) -> String {
    let ratings = o.ratings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    return "\(o.id)|\(o.name)|\(o.age)|\(o.score)|\(o.note ?? "nil")|\(o.best?.code ?? "nil")|"
        + o.pets.map(\.code).joined(separator: ",") + "|" + o.tags.joined(separator: ",") + "|"
        + o.numbers.sorted().map(String.init).joined(separator: ",") + "|" + ratings.joined(separator: ",")
}

func damageRead(_ path: String) throws {
    let lattice = try damageLattice(path, readOnly: true)
    var objects = Digest()
    var maxID = 0
    for owner in lattice.objects(DamageOwner.self) {
        objects.add(describeOwner(owner))
        maxID = max(maxID, owner.id)
    }
    var petCodes: [String] = []
    for pet in lattice.objects(DamagePet.self) {
        objects.add("\(pet.code)|\(pet.kind)|\(pet.weight)")
        petCodes.append(pet.code)
    }
    say("objects \(objects.lines) \(String(objects.hash, radix: 16))")

    var backlinks = Digest()
    for code in petCodes {
        guard let pet = lattice.object(ofType: DamagePet.self, forPrimaryKey: code) else {
            backlinks.add("\(code) missing")
            continue
        }
        backlinks.add("\(code) " + pet.keepers.map { String($0.id) }.sorted().joined(separator: ",")
            + " " + pet.fans.map { String($0.id) }.sorted().joined(separator: ","))
    }
    say("backlinks \(backlinks.lines) \(String(backlinks.hash, radix: 16))")

    var lookups = Digest()
    for id in 0...max(maxID, 10) {
        lookups.add(lattice.object(ofType: DamageOwner.self, forPrimaryKey: id).map(describeOwner) ?? "\(id) none")
    }
    say("lookups \(lookups.lines) \(String(lookups.hash, radix: 16))")

    var queries = Digest()
    for predicate in ["age == 42", "age >= 20 AND age < 23", "name BEGINSWITH 'owner 12'", "name == 'owner 7 xxxxxxx'",
                      "score > 1000 AND score < 1100", "note == nil AND age < 5"] {
        let results = try lattice.objects(DamageOwner.self).filter(predicate)
        queries.add("\(predicate): \(results.count) " + results.map { String($0.id) }.joined(separator: ","))
    }
    let heavy = try lattice.objects(DamagePet.self).filter("weight > 20").sorted(byKeyPath: "code")
    queries.add("pets \(heavy.count) " + heavy.map(\.code).joined(separator: ","))
    say("queries \(queries.lines) \(String(queries.hash, radix: 16))")
}

/// Runs one of the commands above; false for another command. A LatticeError prints "error ..." and
/// exits with status 3.
func damageCommand(_ command: String, _ path: String, _ arguments: [String]) throws -> Bool {
    do {
        return try runDamageCommand(command, path, arguments)
    } catch let error as LatticeError {
        say("error \(error)")
        exit(3)
    }
}

private func runDamageCommand(_ command: String, _ path: String, _ arguments: [String]) throws -> Bool {
    switch command {
    case "damage-build":
        try damageBuild(path, owners: integer(3))
        say("built")
    case "damage-read":
        reportCrashFrames()
        try damageRead(path)
    case "damage-list":
        // The pets of one owner, by a `for … in` loop over its List.
        reportCrashFrames()
        let lattice = try damageLattice(path, readOnly: true)
        if let owner = lattice.object(ofType: DamageOwner.self, forPrimaryKey: integer(3)) {
            for pet in owner.pets { say(pet.code) }
        } else {
            say("no owner")
        }
    case "damage-verify":
        reportCrashFrames()
        let problems = try damageLattice(path, readOnly: true).verify()
        say("problems \(problems.count)")
        for problem in problems.prefix(20) { say("\(problem)") }
    case "open":
        try openAndReport(path, readOnly: arguments.count > 3 && arguments[3] == "ro")
    case "fill":
        signal(SIGXFSZ, SIG_IGN)  // a write past the limit then fails (or is cut short) instead of killing the process
        var limit = rlimit(rlim_cur: rlim_t(integer(3)), rlim_max: rlim_t(integer(3)))
        guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit failed") }
        let lattice = try damageLattice(path, readOnly: false)
        for round in 0..<10_000 {
            try lattice.write {
                for i in 0..<200 {
                    let owner = DamageOwner()
                    owner.id = round * 200 + i
                    owner.name = String(repeating: "n", count: 500)
                    try lattice.add(owner)
                }
            }
        }
        fail("the file never reached the size limit")
    case "open-as-nobody":
        guard setgid(65534) == 0, setuid(65534) == 0 else { fail("cannot become nobody") }
        try openAndReport(path, readOnly: arguments.count > 3 && arguments[3] == "ro")
    default:
        return false
    }
    return true
}
