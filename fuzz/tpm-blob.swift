// Fuzz target: the TPM shim's reader of a sealed blob (Sources/CTouchgateTPM/tg_tpm.c), C code
// that reads `vault_meta.tpm_binding` from the database, where anyone who can write the file
// can put anything. The input is such a blob:
// - it is taken (TG_TPM_OK) only with the shim's magic, a TPM2B_PUBLIC and a TPM2B_PRIVATE that
//   tpm2-tss's unmarshalling accepts, and nothing after them; anything else is TG_TPM_BAD_INPUT;
// - a blob taken stays taken, and one refused stays refused, with any bytes appended (the
//   check is exact, never "a prefix parses");
// - the guard a taken blob names (the second format's NV index) is 0 for the first format
//   and inside Touchgate's NV range otherwise, and the two readers agree.
@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzTPMBlob(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let status = bytes.withUnsafeBufferPointer { tg_tpm_blob_check($0.baseAddress, $0.count) }
    guard status != Int32(TG_TPM_UNAVAILABLE) else {
        fatalError("libtss2-mu could not be loaded: install libtss2-mu0 (apt-get install libtss2-dev)")
    }
    guard status == Int32(TG_TPM_OK) || status == Int32(TG_TPM_BAD_INPUT) else { fatalError("status \(status)") }
    if status == Int32(TG_TPM_OK) {
        // Exactly one parse: one more byte makes it trailing garbage.
        let longer = bytes + [0]
        let again = longer.withUnsafeBufferPointer { tg_tpm_blob_check($0.baseAddress, $0.count) }
        guard again == Int32(TG_TPM_BAD_INPUT) else { fatalError("a blob with a trailing byte was taken") }
        guard bytes.count <= Int(TG_TPM_BLOB_MAX) else { fatalError("a blob longer than TG_TPM_BLOB_MAX was taken") }
        var guardIndex: UInt32 = 1
        let named = bytes.withUnsafeBufferPointer { tg_tpm_blob_guard($0.baseAddress, $0.count, &guardIndex) }
        guard named == Int32(TG_TPM_OK) else { fatalError("a blob taken by the check was refused by the guard reader") }
        guard guardIndex == 0 || (TG_TPM_NV_FIRST...TG_TPM_NV_LAST).contains(guardIndex) else {
            fatalError("a blob names guard \(guardIndex), outside Touchgate's NV range")
        }
    }
    return 0
}
