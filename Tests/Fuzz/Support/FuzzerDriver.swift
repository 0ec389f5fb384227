import Foundation

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

nonisolated(unsafe) private var property: (UnsafeRawBufferPointer) -> Void = { _ in }  // set once before libFuzzer starts, then only read

/// Hands `check` to libFuzzer (linked without its own main, so SwiftPM's entry point stays ours).
public func runFuzzer(_ check: @escaping (UnsafeRawBufferPointer) -> Void) throws {
    property = check
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        property(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
        return 0
    })
}
#else
/// Without libFuzzer: runs each file named on the command line (a saved crash, say) through `check`.
public func runFuzzer(_ check: (UnsafeRawBufferPointer) -> Void) throws {
    for path in CommandLine.arguments.dropFirst() {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes.withUnsafeBytes { check($0) }
        print("\(path): ok")
    }
}
#endif
