import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The cross-process wake-up: every process that observes the file keeps a named FIFO of its own open
/// for reading, in a directory beside the database file (`<path>.notes/`), or, when that directory
/// cannot be made (a read-only directory), in one in the temporary directory named by a hash of the path.
/// After each commit a writer writes one byte into every FIFO there, so each observing process wakes at
/// once (one FIFO shared by all would wake only the process that read the byte first; the others would
/// wait for their backstop check).
///
/// A writer tells whether anyone observes without any registry: opening a FIFO for writing without
/// blocking fails (`ENXIO`) exactly when no process has it open for reading, and the kernel forgets a
/// process that dies; such a FIFO is removed. The writer logs its changes only when some FIFO is open.
enum ChangeSignal {
    /// The directories tried, in order; worked out once per database path (every commit asks, and
    /// building them, the temporary directory's lookup above all, cost about 10,000 instructions).
    static func directories(for path: String) -> [String] {
        if let known = knownDirectories.withLock({ $0[path] }) { return known }
        let hash = String(KeyCodec.fnv1a64(Array(path.utf8)), radix: 16)
        let fallback = (NSTemporaryDirectory() as NSString).appendingPathComponent("lattice-\(hash).notes")
        let directories = [FileMaintenance.notificationPath(path), fallback]
        knownDirectories.withLock { $0[path] = directories }
        return directories
    }

    /// `directories(for:)` by database path (one entry per file a process writes or observes).
    private static let knownDirectories = Mutex<[String: [String]]>([:])

    /// The write ends of the FIFOs of the processes that observe the file (empty when none does). Costs
    /// a failed `opendir` per directory when no process ever observed the file.
    static func openListeners(path: String) -> [Int32] {
        var fds: [Int32] = []
        for directory in directories(for: path) {
            guard let stream = opendir(directory) else { continue }
            defer { closedir(stream) }
            let directoryFD = dirfd(stream)
            while let entry = readdir(stream) {
                // Opened by the entry's own name, relative to the directory: no path built per FIFO and commit.
                let fd = withUnsafeMutablePointer(to: &entry.pointee.d_name) { field in
                    field.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: field.pointee)) { name -> Int32 in
                        // Names starting with a dot: ".", "..", and FIFOs not yet opened by their listener.
                        if name[0] == CChar(UInt8(ascii: ".")) { return -1 }
                        let fd = openat(directoryFD, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                        // Its process stopped listening without removing it.
                        if fd < 0 && errno == ENXIO { unlinkat(directoryFD, name, 0) }
                        return fd
                    }
                }
                guard fd >= 0 else { continue }
                var info = stat()
                if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO { fds.append(fd) } else { close(fd) }
            }
        }
        return fds
    }

    /// Writes the wake-up byte into each FIFO and closes it. A full pipe already holds a wake-up; a
    /// listener that closed meanwhile must not raise SIGPIPE in the writer, so the signal is blocked for
    /// the writes and a pending one consumed.
    static func send(_ fds: [Int32]) {
        var block = sigset_t()
        var previous = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        var pipeClosed = false
        for fd in fds {
            var byte: UInt8 = 1
            if write(fd, &byte, 1) < 0 && errno == EPIPE { pipeClosed = true }
            close(fd)
        }
        if pipeClosed {
            var zero = timespec()
            _ = sigtimedwait(&block, nil, &zero)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// Closes write ends without waking anyone (the commit failed).
    static func discard(_ fds: [Int32]) { fds.forEach { close($0) } }

    /// A listener: this process's FIFO, open for reading (read-write, so it never reports end of file
    /// and never blocks), and its path, to remove when it stops.
    struct Listener {
        let fd: Int32
        let path: String

        /// Closes and removes the FIFO, and its directory when no other FIFO is left in it (a writer then
        /// finds no directory: one failed `opendir` a commit, where an empty one costs three calls).
        func stop() {
            close(fd)
            unlink(path)
            rmdir((path as NSString).deletingLastPathComponent)
        }
    }

    /// A FIFO of this process in the first directory that can hold one (created where possible), or
    /// nil when none can: the notifier then relies on its backstop check alone. `candidates` replaces
    /// `directories(for:)` (tests use it to exercise the fallbacks).
    static func listen(path: String, candidates: [String]? = nil) -> Listener? {
        for directory in candidates ?? directories(for: path) {
            let name = "\(getpid())-\(listenerCounter.add(1, ordering: .relaxed).newValue)"
            // Made under a dot name and renamed once open, so no writer takes it for an abandoned one.
            let pending = directory + "/." + name, fifo = directory + "/" + name
            // Another process's listener may remove the directory as it stops, between `mkdir` and
            // `mkfifo`: then once more.
            var made = false
            for _ in 0..<2 where !made {
                if mkdir(directory, 0o777) != 0 && errno != EEXIST { break }
                var info = stat()
                guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { break }
                unlink(pending)
                made = mkfifo(pending, 0o666) == 0
            }
            guard made else { continue }
            let fd = open(pending, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                unlink(pending)
                continue
            }
            guard rename(pending, fifo) == 0 else {
                close(fd)
                unlink(pending)
                continue
            }
            return Listener(fd: fd, path: fifo)
        }
        return nil
    }

    private static let listenerCounter = Atomic<Int>(0)

    /// Empties the FIFO (one wake-up covers every commit before it).
    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    /// Removes the FIFO directory beside a database file and every FIFO in it (the file is being
    /// deleted; no process has it open).
    static func removeDirectory(path: String) throws {
        let directory = FileMaintenance.notificationPath(path)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names { unlink(directory + "/" + name) }
        if rmdir(directory) != 0 && errno != ENOENT {
            throw LatticeError.storage(path: directory, code: errno, message: "cannot delete it: \(String(cString: strerror(errno))).")
        }
    }
}
