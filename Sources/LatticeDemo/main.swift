import Foundation
import Lattice

/// The to-do list model of the feature catalogue.
final class ToDoItem: Object {
    @Persisted(primaryKey: true) var id = UUID().uuidString
    @Persisted var text = ""
    @Persisted var isCompleted = false
}

let path = CommandLine.arguments.dropFirst().first ?? "todo.lattice"
let configuration = Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [ToDoItem.self])

do {
    // Write the to-do list into a fresh file.
    try Lattice.deleteFiles(for: configuration)
    do {
        let lattice = try Lattice(configuration: configuration)
        try lattice.write {
            for (text, done) in [("Buy milk", true), ("Walk the dog", false), ("Write the report", false)] {
                let item = ToDoItem()
                item.text = text
                item.isCompleted = done
                try lattice.add(item)
            }
        }
        let first = lattice.objects(ToDoItem.self).first { $0.text == "Walk the dog" }
        try lattice.write { first?.isCompleted = true }
        print("Wrote \(lattice.objects(ToDoItem.self).count) to-do items to \(path)")
    }

    // Reopen the file from disk and print what it holds.
    let reopened = try Lattice(configuration: configuration)
    print("Reopened \(path): schema \(reopened.schema)")
    for item in reopened.objects(ToDoItem.self) {
        print("  [\(item.isCompleted ? "x" : " ")] \(item.text)  (id \(item.id))")
    }
    let open = try reopened.objects(ToDoItem.self).filter("isCompleted == %@", false).sorted(byKeyPath: "text")
    print("Still to do (query \"isCompleted == false\", sorted by text): \(open.map(\.text))")
    if let any = reopened.objects(ToDoItem.self).first,
       let again = reopened.object(ofType: ToDoItem.self, forPrimaryKey: any.id) {
        print("Lookup by primary key: \(again)")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
