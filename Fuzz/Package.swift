// swift-tools-version: 6.0
// libFuzzer targets, kept out of the main package (they have no main of
// their own). Build: see Fuzz/README.md.
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, so the main
// package's identity is whatever the checkout is called ("main", "ci", ...).
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "kvcache-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "FuzzRESP", dependencies: [.product(name: "RESP", package: root)]),
        .executableTarget(name: "FuzzCommands", dependencies: [
            .product(name: "RESP", package: root),
            .product(name: "KVCacheServer", package: root),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
