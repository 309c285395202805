import Foundation
import Lattice

// `Author`, `Book`, `Genre` and `LibrarySchema` are generated from Library.lattice.json by the
// LatticeCodegenPlugin when this target builds.

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: CodegenSample <database file>\n".utf8))
    exit(2)
}
let path = CommandLine.arguments[1]
let configuration = Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: LibrarySchema.objectTypes)

do {
    try Lattice.deleteFiles(for: configuration)
    do {
        let lattice = try Lattice(configuration: configuration)
        let herbert = Author()
        herbert.name = "Frank Herbert"
        herbert.born = 1920
        let dickinson = Author()
        dickinson.name = "Emily Dickinson"
        try lattice.write {
            for (isbn, title, author, genre, tags) in [
                ("978-0441013593", "Dune", herbert, Genre.scienceFiction, ["classic", "desert"]),
                ("978-0593099322", "Dune Messiah", herbert, .scienceFiction, []),
                ("978-0316184137", "Poems", dickinson, .poetry, ["classic"]),
            ] {
                let book = Book()
                book.isbn = isbn
                book.title = title
                book.author = author
                book.genre = genre
                book.tags.append(contentsOf: tags)
                try lattice.add(book)
            }
        }
        print("Wrote \(lattice.objects(Book.self).count) books by \(lattice.objects(Author.self).count) authors")
    }

    // Reopen the file and print what it holds.
    let lattice = try Lattice(configuration: configuration)
    for book in try lattice.objects(Book.self).sorted(byKeyPath: "title") {
        let tags = book.tags.isEmpty ? "" : ", tags: " + book.tags.joined(separator: " ")
        print("\(book.title) by \(book.author?.name ?? "?") [\(book.genre.rawValue)], \(book.copies) copy\(tags)")
    }
    for author in try lattice.objects(Author.self).sorted(byKeyPath: "name") {
        let born = author.born.map { " (born \($0))" } ?? ""
        print("\(author.name)\(born): \(author.books.count) book(s)")
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
