// `touchgate-cli`: every command, in either mode; the personal mode's service runs in
// this process. `touchgate` execs it for the personal mode (and `touchgate-client` hands it
// what needs the service).
//
// Installed, it is also `touchgate-client` and `touchgated` (symbolic links to it): one copy
// of the Swift runtime and of the code for the three, where each carried its own (the
// packages weighed three times as much). Which one runs is the name it was started by.
import TouchgateBasics
import TouchgateCommands
import TouchgatedCommand

switch SiblingProgram.startedAs() {
case "touchgated":
    // The set-group-ID group this file is installed with is the agent's, never the daemon's
    // (its unit also starts it with NoNewPrivileges=yes): given up before anything runs.
    AgentGroup.drop()
    await Touchgated.runCommandLine()
case SiblingProgram.client.name:
    await CommandLineEntry.run(host: nil)
default:
    await CommandLineEntry.run(host: LocalHost())
}
