/// This release of Touchgate, as every program of it reports it (`--version`).
public enum Release {
    /// The version, one for the whole package.
    public static let version = "0.1.0"
}
