// `touchgate-cli`: every command, in either mode; the personal mode's service runs in
// this process. `touchgate` execs it for the personal mode (and `touchgate-client` hands it
// what needs the service).
import TouchgateCommands

await CommandLineEntry.run(host: LocalHost())
