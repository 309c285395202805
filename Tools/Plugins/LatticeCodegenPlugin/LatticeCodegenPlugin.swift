import Foundation
import PackagePlugin

/// Runs `lattice-codegen` (its executable target, `LatticeCodegen`) on the `*.lattice.json` files of a target before it compiles.
///
/// One build command covers all of the target's schema files, because a class of one file may link to a
/// class of another: it declares the schema files as inputs and one `X.swift` per `X.lattice.json` in
/// the plugin's work directory as outputs, so the build runs it again only when a schema file changed.
@main
struct LatticeCodegenPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let schemas = target.sourceFiles
            .map(\.url)
            .filter { $0.lastPathComponent.hasSuffix(".lattice.json") }
            .sorted { $0.path < $1.path }
        guard !schemas.isEmpty else { return [] }
        let outputDirectory = context.pluginWorkDirectoryURL.appending(path: "GeneratedModels")
        let outputs = schemas.map {
            outputDirectory.appending(path: String($0.lastPathComponent.dropLast(".lattice.json".count)) + ".swift")
        }
        return [
            .buildCommand(
                displayName: "Generating Lattice models of \(target.name) from \(schemas.map(\.lastPathComponent).joined(separator: ", "))",
                executable: try context.tool(named: "LatticeCodegen").url,
                arguments: schemas.map(\.path) + ["--output-dir", outputDirectory.path],
                inputFiles: schemas,
                outputFiles: outputs
            ),
        ]
    }
}
