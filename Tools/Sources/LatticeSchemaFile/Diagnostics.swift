/// A place in a schema file: 1-based line and column. Columns count Unicode scalars, so a position
/// after non-ASCII text still points at the right character.
public struct SourcePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The line, from 1; 0 when the element was not read from a file (a schema built in code).
    public var line: Int
    /// The column, from 1; 0 when unknown.
    public var column: Int

    /// Creates a position.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// The position of elements that were not read from a file.
    public static let unknown = SourcePosition(line: 0, column: 0)

    /// `line:column`.
    public var description: String { "\(line):\(column)" }

    /// Earlier lines first, then earlier columns.
    public static func < (a: SourcePosition, b: SourcePosition) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }
}

/// One problem found in a schema file, at a position.
public struct SchemaDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file as it was named to the reader (a path, or a name given in code).
    public var file: String
    /// Where the problem is; ``SourcePosition/unknown`` for a problem with the file as a whole.
    public var position: SourcePosition
    /// What is wrong, naming the class, property or enum concerned.
    public var message: String

    /// Creates a diagnostic.
    public init(file: String, position: SourcePosition, message: String) {
        self.file = file
        self.position = position
        self.message = message
    }

    /// `file:line:column: error: message`, the form compilers print and editors link.
    public var description: String {
        position == .unknown ? "\(file): error: \(message)" : "\(file):\(position.line):\(position.column): error: \(message)"
    }
}

/// Schema files that cannot be used: every problem found, in file and position order.
public struct SchemaFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems, at least one.
    public var diagnostics: [SchemaDiagnostic]

    /// Creates an error from its diagnostics.
    public init(_ diagnostics: [SchemaDiagnostic]) {
        self.diagnostics = diagnostics
    }

    /// One diagnostic a line.
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
