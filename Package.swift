// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Lattice",
    products: [
        .library(name: "Lattice", targets: ["Lattice"]),
        .executable(name: "lattice-demo", targets: ["LatticeDemo"]),
    ],
    dependencies: [
        // Authenticated encryption (AES-GCM) and key derivation for encrypted files.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // A thread-local flag the model initializers read (Swift has no thread-local variables).
        .target(name: "CLatticeSupport"),
        .target(
            name: "Lattice",
            dependencies: ["CLMDB", "CLatticeSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "LatticeDemo",
            dependencies: ["Lattice"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Child process launched by the multi-process tests.
        .executableTarget(
            name: "LatticeTestHelper",
            dependencies: ["Lattice"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "LatticeTests",
            dependencies: ["Lattice", "LatticeTestHelper", "CLMDB"],
            exclude: ["Fixtures"],  // files the tests open by path
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
