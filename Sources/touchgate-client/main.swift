// `touchgate-client`: every command through touchgated, linking neither the service nor
// the vault (so neither libfprint, GLib, GRDB nor libsodium), which is what `touchgate`
// execs when the daemon serves. The personal mode, and the few commands that need the
// store in this process, are handed to `touchgate-cli` with the same arguments.
import TouchgateCommands

await CommandLineEntry.run(host: nil)
