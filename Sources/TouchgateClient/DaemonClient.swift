enum DaemonClientPlaceholder {}
