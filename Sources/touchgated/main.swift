// `touchgated`: the system daemon (TouchgatedCommand). Installed, it is a name of
// touchgate-cli, which runs this same command when started as touchgated.
import TouchgatedCommand

await Touchgated.runCommandLine()
