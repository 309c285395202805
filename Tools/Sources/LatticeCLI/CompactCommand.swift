import ArgumentParser
import Foundation
import Lattice
import Synchronization

/// `lattice compact`: rewrites a file without its free pages, through the library's compaction on open.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite a file without its free pages, when no other process has it open.",
        discussion: """
            A compacted copy is written beside the file, flushed and renamed over it, so a crash leaves the \
            old or the new file, never a broken one. Nothing is done (exit status 1) while another process \
            has the file open. Prints the sizes before and after.
            """
    )

    @OptionGroup var file: FileArgument

    func run() throws {
        try reportingFailures {
            // Opened read-only first, and closed: a file that is no Lattice database fails here, untouched.
            do { _ = try file.open() }
            let before = fileSize()
            // The library calls the decision only when no other process has the file open.
            let decided = Mutex<(total: Int, used: Int)?>(nil)
            var configuration = try file.configuration(readOnly: false)
            configuration.shouldCompactOnLaunch = { total, used in
                decided.withLock { $0 = (total, used) }
                return true
            }
            _ = try Lattice(configuration: configuration)
            guard decided.withLock({ $0 }) != nil else {
                throw CommandFailure.failure("'\(file.path)' is open in another process; close it there and compact again.")
            }
            print("Compacted \(file.path): \(byteCount(before)) -> \(byteCount(fileSize())).")
        }
    }

    private func fileSize() -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int) ?? 0
    }
}
