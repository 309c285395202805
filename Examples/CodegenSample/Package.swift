// swift-tools-version:6.0
import PackageDescription

// A package whose model classes are generated at build time from a schema file by Lattice's
// build-tool plugin. Apps outside this repository name the Lattice repository's URL instead of the paths.
let package = Package(
    name: "CodegenSample",
    dependencies: [
        // Named, because a path dependency's identity is its directory's name, which differs between clones.
        .package(name: "Lattice", path: "../.."),
        .package(name: "LatticeTools", path: "../../Tools"),
    ],
    targets: [
        .executableTarget(
            name: "CodegenSample",
            dependencies: [.product(name: "Lattice", package: "Lattice")],
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "LatticeCodegenPlugin", package: "LatticeTools")]
        ),
    ]
)
