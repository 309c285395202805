import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The cross-process wake-up: a named FIFO beside the database file (`<path>.note`), or, when that
/// directory is read-only or refuses FIFOs, one in the temporary directory named by a hash of the path.
///
/// Every process that observes the file keeps the FIFO open for reading (its notifier's listener), so
/// a writer can tell whether anyone observes without any registry: opening the FIFO for writing without
/// blocking fails (`ENXIO`, or `ENOENT` before any observer created it) exactly when no process has it
/// open for reading, and the kernel forgets a process that dies. The writer then logs its changes and,
/// after the commit, writes one byte.
enum ChangeSignal {
    /// The FIFO paths tried, in order; worked out once per database path (every commit asks, and
    /// building them, the temporary directory's lookup above all, cost about 10,000 instructions).
    static func paths(for path: String) -> [String] {
        if let known = knownPaths.withLock({ $0[path] }) { return known }
        let hash = String(KeyCodec.fnv1a64(Array(path.utf8)), radix: 16)
        let fallback = (NSTemporaryDirectory() as NSString).appendingPathComponent("lattice-\(hash).note")
        let paths = [path + ".note", fallback]
        knownPaths.withLock { $0[path] = paths }
        return paths
    }

    /// `paths(for:)` by database path (one entry per file a process writes or observes).
    private static let knownPaths = Mutex<[String: [String]]>([:])

    /// A write end of the FIFO when some process listens, else nil. Costs one failed `open` per path when
    /// nobody observes the file.
    static func openIfListening(path: String) -> Int32? {
        for fifo in paths(for: path) {
            let fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            // Something else under the name (a regular file): the listeners use the fallback.
            var info = stat()
            if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO { return fd }
            close(fd)
        }
        return nil
    }

    /// Writes the wake-up byte and closes `fd`. A full pipe already holds a wake-up; a listener that
    /// closed meanwhile must not raise SIGPIPE in the writer, so the signal is blocked for the write and
    /// a pending one consumed.
    static func send(_ fd: Int32) {
        var block = sigset_t()
        var previous = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        var byte: UInt8 = 1
        if write(fd, &byte, 1) < 0 && errno == EPIPE {
            var zero = timespec()
            _ = sigtimedwait(&block, nil, &zero)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        close(fd)
    }

    /// Closes a write end without waking anyone (the commit failed).
    static func discard(_ fd: Int32) { close(fd) }

    /// Opens the FIFO for listening (creating it where possible), or nil when no FIFO can be used: the
    /// notifier then relies on its backstop check alone. Opened read-write so it never reports end of
    /// file and never blocks.
    static func listen(path: String, candidates: [String]? = nil) -> Int32? {
        for fifo in candidates ?? paths(for: path) {
            if mkfifo(fifo, 0o666) != 0 && errno != EEXIST { continue }
            var info = stat()
            guard stat(fifo, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { continue }
            let fd = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { return fd }
        }
        return nil
    }

    /// Empties the FIFO (one wake-up covers every commit before it).
    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
